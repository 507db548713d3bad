-- files: the fs roots' files as file:// resources (what the `file` resource and the
-- code_review prompt share): URIs, MIME types from the extension, contents as text or a
-- base64 blob, with a size bound. Every access goes through `fs`, so paths outside the
-- roots, `..` tricks and symlinks that leave a root are refused as they are for tools.
local M = {}

-- Largest file served (a resource is read whole).
M.MAX_BYTES = 1024 * 1024
-- A listing names at most this many files, at most this many folders deep.
M.MAX_LISTED = 200
M.MAX_DEPTH = 3

local TYPES = {
  txt = "text/plain", md = "text/markdown", lua = "text/x-lua", rs = "text/x-rust",
  py = "text/x-python", js = "text/javascript", mjs = "text/javascript",
  ts = "text/x-typescript", go = "text/x-go", c = "text/x-c", h = "text/x-c",
  sh = "text/x-shellscript", html = "text/html", css = "text/css", csv = "text/csv",
  json = "application/json", toml = "application/toml", yaml = "application/yaml",
  yml = "application/yaml", xml = "application/xml", png = "image/png",
  jpg = "image/jpeg", jpeg = "image/jpeg", gif = "image/gif", webp = "image/webp",
  svg = "image/svg+xml", pdf = "application/pdf", zip = "application/zip",
  gz = "application/gzip", wasm = "application/wasm",
}

-- The MIME type of `path` by its extension (nil when unknown).
function M.mime_type(path)
  local ext = path:match("%.(%w+)$")
  return ext and TYPES[ext:lower()] or nil
end

-- The file:// URI of an absolute path (everything but unreserved characters and `/`
-- percent-encoded, as the `file:///{+path}` template expects).
function M.uri(path)
  local encoded = path:gsub("[^%w%-%._~/]", function(c)
    return string.format("%%%02X", c:byte())
  end)
  return "file://" .. encoded
end

-- The absolute path of `path` (relative paths are under the first root).
function M.absolute(path)
  if path:sub(1, 1) == "/" then return path end
  local roots = fs.roots()
  if #roots == 0 then error("files: no fs roots are configured", 0) end
  return roots[1] .. "/" .. path
end

-- Whether the absolute `path` lies in one of the roots (by its text).
function M.inside(path)
  for _, root in ipairs(fs.roots()) do
    if path == root or path:sub(1, #root + 1) == root .. "/" then return true end
  end
  return false
end

-- The file's contents as one resource item: `{ text, mime_type }` or, for binary data,
-- `{ blob, mime_type }`; nil when there is no regular file there. Raises for a `..`
-- segment, a path outside the roots or a file over MAX_BYTES.
function M.contents(path)
  for segment in path:gmatch("[^/]+") do
    if segment == ".." then error("files: '..' is not allowed in " .. path, 0) end
  end
  -- A path outside the roots is refused, not missing (fs refuses it too, and a symlink
  -- inside that leads out).
  if not M.inside(path) then error("files: " .. path .. " is outside the fs roots", 0) end
  local dir, name = path:match("^(.*)/([^/]+)$")
  if not name then return nil end
  if dir == "" then dir = "/" end
  if not fs.exists(dir) then return nil end
  local entry
  for _, e in ipairs(fs.list(dir)) do
    if e.name == name then entry = e break end
  end
  if not entry or entry.type == "dir" then return nil end
  -- A listing never follows a symlink ("other"): fs.read does, refusing one that leads
  -- out of the roots; its size is checked once read.
  if entry.size > M.MAX_BYTES then
    error(string.format("files: %s has %d bytes; at most %d are served", path, entry.size, M.MAX_BYTES), 0)
  end
  local content = fs.read(path)
  if #content > M.MAX_BYTES then
    error(string.format("files: %s has %d bytes; at most %d are served", path, #content, M.MAX_BYTES), 0)
  end
  local mime = M.mime_type(path)
  if content:sub(1, 8192):find("\0", 1, true) or not utf8.len(content) then
    return { blob = json.base64(content), mime_type = mime or "application/octet-stream" }
  end
  return { text = content, mime_type = mime or "text/plain" }
end

-- The files of every root, breadth first, hidden entries (".git") skipped, symlinks not
-- followed, at most MAX_LISTED files and MAX_DEPTH folders deep.
function M.list()
  local out = {}
  for _, root in ipairs(fs.roots()) do
    local queue, head = { { root, 0 } }, 1
    while queue[head] and #out < M.MAX_LISTED do
      local dir, depth = queue[head][1], queue[head][2]
      head = head + 1
      local ok, entries = pcall(fs.list, dir)
      for _, e in ipairs(ok and entries or {}) do
        if #out >= M.MAX_LISTED then break end
        if e.name:sub(1, 1) ~= "." then
          local path = dir .. "/" .. e.name
          if e.type == "file" then
            out[#out + 1] = {
              uri = M.uri(path),
              name = path:sub(#root + 2),
              mime_type = M.mime_type(path),
            }
          elseif e.type == "dir" and depth + 1 < M.MAX_DEPTH then
            queue[#queue + 1] = { path, depth + 1 }
          end
        end
      end
    end
  end
  return out
end

return M
