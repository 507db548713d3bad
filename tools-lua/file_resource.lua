-- file_resource: every file in the fs roots, read-only, as `file:///{+path}` resources
-- (text, or a base64 blob for binary files; at most 1 MiB each).
local files = require("files")

registry.resource{
  uri = "file:///{+path}",
  name = "file",
  title = "Files",
  description = "The files in the server's fs roots, read-only (at most 1 MiB each)",
  toolset = "file",
  read = function(params)
    return files.contents("/" .. params.path)
  end,
  list = function()
    return files.list()
  end,
}
