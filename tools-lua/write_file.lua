-- write_file: create or replace a text file, creating missing folders (inside the roots).
local args = require("args")

registry.register{
  name = "write_file",
  toolset = "file",
  annotations = {
    title = "Write a file", read_only = false,
    destructive = true, idempotent = true, open_world = false,
  },
  emoji = "✏️",
  schema = {
    description = "Create or replace a text file with the given content (missing folders are created)",
    parameters = {
      type = "object",
      properties = {
        path = { type = "string", description = "File path, relative to the working directory" },
        content = { type = "string", description = "The complete new content" },
      },
      required = { "path", "content" },
    },
  },
  handler = function(a)
    local path = args.string("write_file", a.path, "path")
    if type(a.content) ~= "string" then args.fail("write_file", "'content' must be a string") end
    local folder = path:match("^(.+)/[^/]*$")
    if folder and not fs.exists(folder) then fs.mkdir(folder) end
    fs.write(path, a.content)
    return string.format("wrote %d bytes to %s", #a.content, path)
  end,
}
