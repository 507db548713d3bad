-- toolhost sandbox bootstrap. Runs once per VM against the VM's private globals (which no
-- tool file ever sees) and returns the per-file environment factory.
--
-- Every tool file and every required module gets its own environment table holding its own
-- *copies* of the standard-library and host-API tables: a file may scribble over its copy
-- (even with rawset) without changing what another file sees.
local host = ...

local G = _G
local pairs, ipairs, setmetatable = pairs, ipairs, setmetatable
local real_load, running = load, coroutine.running
local real_create, real_wrap = coroutine.create, coroutine.wrap
local collect = collectgarbage

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

-- Which handler a Lua thread (coroutine) runs for, so that env.get can apply the calling
-- tool's `requires_env`. Coroutines created by tool code inherit their creator's binding.
local thread_tool = setmetatable({}, { __mode = "k" })

local function bind_thread(co, fn_id)
  thread_tool[co] = fn_id
end

local coroutine_lib = copy(coroutine)
coroutine_lib.create = function(f)
  local owner = thread_tool[running()]
  return real_create(function(...)
    thread_tool[running()] = owner
    return f(...)
  end)
end
coroutine_lib.wrap = function(f)
  local owner = thread_tool[running()]
  return real_wrap(function(...)
    thread_tool[running()] = owner
    return f(...)
  end)
end

local allowed_gc = { collect = true, count = true, step = true }
local function safe_collectgarbage(opt, ...)
  opt = opt or "collect"
  if not allowed_gc[opt] then
    error("collectgarbage: option '" .. tostring(opt) .. "' is not available in the sandbox", 2)
  end
  return collect(opt, ...)
end

local base_names = {
  "assert", "error", "getmetatable", "ipairs", "next", "pairs", "pcall", "rawequal",
  "rawget", "rawlen", "rawset", "select", "setmetatable", "tonumber", "tostring", "type",
  "xpcall", "_VERSION",
}

local string_lib = copy(string)
string_lib.dump = nil -- bytecode never enters or leaves the sandbox
local os_lib = { time = os.time, clock = os.clock, date = os.date }

-- env.get consults the calling thread's handler.
local env_get = host.env_get
local env_lib = {
  get = function(name) return env_get(thread_tool[running()], name) end,
}

-- Builds a fresh environment. `api` names the host-API tables this file may use (nil: all);
-- `require_fn` resolves modules for this file; `registry` is the registration binding.
local function make_env(api, require_fn, registry)
  local env = {}
  for _, name in ipairs(base_names) do env[name] = G[name] end
  env.string = copy(string_lib)
  env.table = copy(table)
  env.math = copy(math)
  env.utf8 = copy(utf8)
  env.coroutine = copy(coroutine_lib)
  env.os = copy(os_lib)
  env.collectgarbage = safe_collectgarbage
  env.print = host.print
  for name, lib in pairs(host.api) do
    if api == nil or api[name] then env[name] = copy(lib) end
  end
  if api == nil or api.env then env.env = copy(env_lib) end
  env.registry = copy(registry)
  env.require = require_fn
  -- Text chunks only; a chunk without an explicit environment sees this file's globals.
  env.load = function(chunk, name, _mode, chunk_env)
    if chunk_env == nil then chunk_env = env end
    return real_load(chunk, name, "t", chunk_env)
  end
  env._G = env
  return env
end

return make_env, bind_thread
