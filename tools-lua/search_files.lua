-- search_files: regex search in file contents, or find files by glob.
registry.register{
  name = "search_files",
  toolset = "file",
  annotations = { title = "Search files", read_only = true, open_world = false },
  emoji = "🔎",
  max_result_size_chars = 50000,
  schema = {
    description = "Search file contents with a regex (pattern), or list files matching a glob (glob only)",
    parameters = {
      type = "object",
      properties = {
        pattern = { type = "string", description = "Regular expression to search for in file contents" },
        glob = { type = "string", description = "Only files matching this glob, e.g. **/*.rs" },
        path = { type = "string", description = "Folder to search (default: the working directory)" },
      },
      required = {},
    },
  },
  handler = function(a)
    if (a.pattern == nil or a.pattern == "") and (a.glob == nil or a.glob == "") then
      error("search_files: give a pattern, a glob, or both", 0)
    end
    local out = {}
    if a.pattern and a.pattern ~= "" then
      for _, m in ipairs(fs.grep(a.pattern, a.path, a.glob)) do
        out[#out + 1] = string.format("%s:%d:%s", m.path, m.line, m.text)
      end
      if #out == 0 then return "no matches" end
    else
      out = fs.glob(a.glob, a.path)
      if #out == 0 then return "no files match " .. a.glob end
    end
    return table.concat(out, "\n")
  end,
}
