-- patch: replace one exact, unique occurrence of a text in a file.
local args = require("args")

local function count(haystack, needle)
  local n, from = 0, 1
  while true do
    local s, e = string.find(haystack, needle, from, true)
    if not s then return n end
    n = n + 1
    from = e + 1
  end
end

registry.register{
  name = "patch",
  toolset = "file",
  annotations = {
    title = "Patch a file", read_only = false,
    destructive = true, idempotent = false, open_world = false,
  },
  emoji = "🩹",
  schema = {
    description = "Replace one exact, unique occurrence of old_text with new_text in a file",
    parameters = {
      type = "object",
      properties = {
        path = { type = "string" },
        old_text = { type = "string", description = "Exact text to find; must occur exactly once" },
        new_text = { type = "string", description = "Replacement text" },
      },
      required = { "path", "old_text", "new_text" },
    },
  },
  handler = function(a)
    local path = args.string("patch", a.path, "path")
    local old = args.string("patch", a.old_text, "old_text")
    if type(a.new_text) ~= "string" then args.fail("patch", "'new_text' must be a string") end
    local text = fs.read(path)
    local n = count(text, old)
    if n == 0 then
      args.fail("patch", "old_text was not found in " .. path .. "; read the file and copy the text exactly")
    elseif n > 1 then
      args.fail("patch", string.format(
        "old_text occurs %d times in %s; include more surrounding lines so it is unique", n, path))
    end
    local s, e = string.find(text, old, 1, true)
    fs.write(path, text:sub(1, s - 1) .. a.new_text .. text:sub(e + 1))
    return "patched " .. path
  end,
}
