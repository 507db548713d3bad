-- read_file: a text file with line numbers, optionally a window of it.
local text = require("text")

registry.register{
  name = "read_file",
  toolset = "file",
  annotations = { title = "Read a file", read_only = true, open_world = false },
  emoji = "📄",
  parallel_safe = true,
  max_result_size_chars = 100000,
  schema = {
    description = "Read a text file with line numbers (N|text). Use offset/limit for large files.",
    parameters = {
      type = "object",
      properties = {
        path = { type = "string", description = "File path, relative to the working directory" },
        offset = { type = "integer", minimum = 1, description = "First line to show (1-based)" },
        limit = { type = "integer", minimum = 1, description = "Number of lines to show" },
      },
      required = { "path" },
    },
  },
  handler = function(args)
    if type(args.path) ~= "string" or args.path == "" then
      error("read_file: 'path' must be a non-empty string", 0)
    end
    local content = fs.read(args.path)
    -- Binary content would reach the model as noise: say what it is instead.
    if content:sub(1, 8192):find("\0", 1, true) or not utf8.len(content) then
      return string.format("(%s is a binary file of %d bytes; not shown)", args.path, #content)
    end
    local lines = text.lines(content)
    if #lines == 0 then
      return "(empty file)"
    end
    local first = math.max(1, math.tointeger(args.offset) or 1)
    if first > #lines then
      return string.format("(offset %d is past the end: the file has %d lines)", first, #lines)
    end
    local last = #lines
    if args.limit then
      last = math.min(#lines, first + math.max(1, math.tointeger(args.limit) or 1) - 1)
    end
    return text.numbered(lines, first, last)
  end,
}
