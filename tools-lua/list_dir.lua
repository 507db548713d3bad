-- list_dir: the entries of a directory, directories first.
registry.register{
  name = "list_dir",
  toolset = "file",
  annotations = { title = "List a directory", read_only = true, open_world = false },
  emoji = "📁",
  parallel_safe = true,
  schema = {
    description = "List a directory: one entry per line, directories marked with a trailing /",
    parameters = {
      type = "object",
      properties = {
        path = { type = "string", description = "Directory path (default: the working directory)" },
      },
      required = {},
    },
  },
  handler = function(args)
    local entries = fs.list(args.path or ".")
    table.sort(entries, function(a, b)
      if (a.type == "dir") ~= (b.type == "dir") then return a.type == "dir" end
      return a.name < b.name
    end)
    local out = {}
    for _, entry in ipairs(entries) do
      if entry.type == "dir" then
        out[#out + 1] = entry.name .. "/"
      else
        out[#out + 1] = string.format("%s  (%d bytes)", entry.name, entry.size)
      end
    end
    if #out == 0 then return "(empty directory)" end
    return table.concat(out, "\n")
  end,
}
