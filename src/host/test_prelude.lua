-- Assertion helpers of `toolhost test`. Each failure raises at the test's own line
-- (error level 2) with what was expected and what came.
local function show(v, depth)
  depth = depth or 0
  if type(v) == "string" then return string.format("%q", v) end
  if type(v) ~= "table" then return tostring(v) end
  if depth > 3 then return "{...}" end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  local parts = {}
  for _, k in ipairs(keys) do
    parts[#parts + 1] = tostring(k) .. " = " .. show(v[k], depth + 1)
  end
  return "{" .. table.concat(parts, ", ") .. "}"
end

local function equal(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then return a == b end
  for k, v in pairs(a) do if not equal(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

local function fail(message, what)
  error((what and (what .. ": ") or "") .. message, 3)
end

return function(call_fn, fs_root, write_fn, env_fn, proc_fn, answer_fn, read_fn, prompt_fn)
  local t = {}
  function t.call(name, args) return call_fn(name, args) end
  -- Reads a resource: a list of { uri, mimeType?, text | blob }, or { error_type, message }.
  function t.read(uri)
    if type(uri) ~= "string" then error("t.read expects a URI (a string)", 2) end
    return read_fn(uri)
  end
  -- Renders a prompt: { description?, messages = { { role, content }, ... } }, or
  -- { error_type, message }.
  function t.prompt(name, args)
    if type(name) ~= "string" then error("t.prompt expects a prompt name (a string)", 2) end
    return prompt_fn(name, args)
  end
  -- Environment variables for this test only (before its first t.call).
  function t.env(vars)
    if type(vars) ~= "table" then error("t.env expects a table of NAME = \"value\"", 2) end
    local problem = env_fn(vars)
    if problem then error(problem, 2) end
  end
  -- Scripted proc.run answers for this test only (before its first t.call):
  -- t.proc{ { argv = {"git", "status"}, stdout = "clean", code = 0 }, ... }
  function t.proc(runs)
    if type(runs) ~= "table" then error("t.proc expects a list of {argv = {...}, stdout, stderr, code}", 2) end
    local problem = proc_fn(runs)
    if problem then error(problem, 2) end
  end
  -- Scripted answers for ctx.ask/ctx.roots/ctx.sample of the test's later calls: a list
  -- (taken in order) or a table by request key; t.answer{ {action = "accept", content = {...}} }.
  function t.answer(answers)
    if type(answers) ~= "table" then
      error("t.answer expects a list of answers or a table of answers by request key", 2)
    end
    local problem = answer_fn(answers)
    if problem then error(problem, 2) end
  end
  function t.eq(got, expected, what)
    if not equal(got, expected) then
      fail("expected " .. show(expected) .. ", got " .. show(got), what)
    end
  end
  function t.ok(value, what)
    if not value then fail("expected a true value, got " .. show(value), what) end
  end
  function t.match(text, pattern, what)
    if type(text) ~= "string" or not text:find(pattern) then
      fail("expected text matching " .. show(pattern) .. ", got " .. show(text), what)
    end
  end
  function t.contains(haystack, needle, what)
    if type(haystack) == "string" and type(needle) == "string" then
      if haystack:find(needle, 1, true) then return end
    elseif type(haystack) == "table" then
      for _, v in pairs(haystack) do if equal(v, needle) then return end end
    end
    fail("expected " .. show(haystack) .. " to contain " .. show(needle), what)
  end
  function t.error_type(result, expected, what)
    local got = type(result) == "table" and result.error_type or nil
    if got ~= expected then
      fail("expected an error of type " .. show(expected) .. ", got " .. show(result), what)
    end
  end
  -- The test's own file-system root (a fresh temp dir): t.fs() or t.fs("a/b.txt").
  function t.fs(path)
    if path == nil or path == "" then return fs_root end
    return fs_root .. "/" .. path
  end
  -- Writes a file under the test's root (folders are created; never outside the root).
  function t.write(path, text)
    local problem = write_fn(path, text)
    if problem then error(problem, 2) end
    return t.fs(path)
  end
  return t
end
