-- code_review: a prompt asking for a review of one file, the file embedded as a resource.
local files = require("files")

registry.prompt{
  name = "code_review",
  title = "Code review",
  description = "Review a file: its contents embedded as a resource, with an optional focus",
  toolset = "file",
  arguments = {
    { name = "path", description = "The file to review (relative to the first fs root, or absolute)", required = true },
    { name = "focus", description = "What to look at most (e.g. error handling)" },
  },
  render = function(args)
    local path = files.absolute(args.path)
    local contents = files.contents(path)
    if not contents then error("code_review: no file at " .. args.path, 0) end
    local ask = "Review the file " .. args.path .. ": correctness first, then clarity and tests."
    if args.focus and args.focus ~= "" then
      ask = ask .. " Focus on " .. args.focus .. "."
    end
    return {
      { role = "user", content = {
          type = "resource", uri = files.uri(path), mime_type = contents.mime_type,
          text = contents.text, blob = contents.blob,
      } },
      { role = "user", content = ask },
    }
  end,
  complete = {
    path = function(prefix)
      local out = {}
      for _, item in ipairs(files.list()) do
        if item.name:sub(1, #prefix) == prefix then out[#out + 1] = item.name end
        if #out == 100 then break end
      end
      return out
    end,
  },
}
