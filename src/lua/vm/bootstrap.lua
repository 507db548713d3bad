-- toolhost sandbox bootstrap. Runs once per VM against the VM's private globals (which no
-- tool file ever sees) and returns the per-file environment factory, the handler
-- trampoline, the function that opens a new synchronous run (load, probe, hook), the maker
-- of a caller's hidden metatable, and the trampoline of a handler that cannot see a `ctx`.
--
-- Every tool file and every required module gets its own environment table holding its own
-- *copies* of the standard-library and host-API tables: a file may scribble over its copy
-- (even with rawset) without changing what another file sees. Host functions that act on
-- someone's behalf (`env.get`, `registry.*`) are bound per environment, so they act with
-- the grants of the file that *defined* the calling function (identity is lexical), never
-- with those of whichever call happens to be running.
local host = ...

local G = _G
local pairs, ipairs, type, error = pairs, ipairs, type, error
local real_setmetatable, rawget = setmetatable, rawget
local real_load, running = load, coroutine.running
local table_concat, prescan, progress = table.concat, host.prescan, host.progress
local real_create, real_resume, real_close = coroutine.create, coroutine.resume, coroutine.close
local collect = collectgarbage
local pack, unpack = table.pack, table.unpack

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

local function refuse_write() error("ctx is read-only", 2) end

-- Which call a Lua thread belongs to (a fresh token per handler call: its `ctx`, or a table
-- of its own when it gets none; coroutines created by tool code inherit their creator's),
-- and which call created a coroutine. Tool code may resume or close only coroutines its own
-- call created, so a thread kept from an earlier call (or a recycled handler thread) is
-- useless to it. A token outlives its call as long as its thread (a recycled one until its
-- next call): a `ctx` kept so holds no more than what the handler could keep in a global.
local call_of = real_setmetatable({}, { __mode = "k" })
local created_by = real_setmetatable({}, { __mode = "k" })
-- The token of code running outside any handler (a file's top level, a probe, a hook);
-- renewed by `begin_sync` before each such run.
local sync_call = {}
local function current_call() return call_of[running()] or sync_call end
local function begin_sync() sync_call = {} end

-- Threads running a handler right now (call_async's coroutines); host functions that await
-- work only there.
local handler_threads = real_setmetatable({}, { __mode = "k" })

-- Threads running a function of `ctx.all`: what they await (an input request, `ctx.call`,
-- an awaiting host function) is relayed to the handler thread by yielding to `ctx.all`'s
-- loop, which runs it there and resumes the function with the outcome.
local all_threads = real_setmetatable({}, { __mode = "k" })
local real_yield, real_status = coroutine.yield, coroutine.status
-- What an `all` thread yields to `ctx.all`'s loop: AWAIT (run this host function for me)
-- or ASK (this input request goes into the round). Private tables: tool code cannot forge
-- them, and a plain `coroutine.yield` is passed on as it is.
local AWAIT, ASK = {}, {}

-- Whether the running thread may await host functions.
local function awaiting_thread()
  local co = running()
  return handler_threads[co] or all_threads[co]
end

-- `call_here(fn, ...)`: calls a host function on the running thread, its error caught as a
-- plain message.
local call_here -- defined below, with the host-API glue

-- Calls the awaiting host function `fn` where awaiting is possible: `true, packed results`
-- or `false, message`; `nil` when the running thread cannot await (a coroutine of the
-- tool's own, code outside a handler).
local function await(fn, ...)
  local co = running()
  if handler_threads[co] then return call_here(fn, ...) end
  if all_threads[co] then return real_yield(AWAIT, fn, ...) end
  return nil
end

-- The host functions that await are made at their first use in this VM (mlua runs a chunk
-- to make each, and most VMs never call most of them), then kept. The keys are this
-- file's own. `call_made` and `await_made` are `call_here` and `await` of the function
-- `key` names; a failure to make it (near the memory limit) is their `false, message`.
local make_awaiting, awaiting_made = host.make_awaiting, {}
local function awaiting_fn(key)
  local fn = awaiting_made[key]
  if fn == nil then
    local ok, r = call_here(make_awaiting, key)
    if not ok then return nil, r end
    fn = r[2]
    awaiting_made[key] = fn
  end
  return fn
end
local function call_made(key, ...)
  local fn, e = awaiting_fn(key)
  if not fn then return false, e end
  return call_here(fn, ...)
end
local function await_made(key, ...)
  local fn, e = awaiting_fn(key)
  if not fn then return false, e end
  return await(fn, ...)
end

-- `ctx.call(name, args)`: awaits another tool's result (a string, or a table for JSON and
-- errors). Only where awaiting is possible.
local function ctx_call(name, args)
  if not awaiting_thread() then
    error("ctx.call can only be called from the tool handler itself (not inside coroutine.create/wrap)", 2)
  end
  if type(name) ~= "string" then error("ctx.call: the tool name must be a string", 2) end
  if args ~= nil and type(args) ~= "table" then
    error("ctx.call: the arguments must be a table", 2)
  end
  local ok, r = await_made("call_tool", name, args)
  if not ok then error(r, 2) end
  return r[2]
end

-- `ctx.ask{...}`, `ctx.roots()`, `ctx.sample{...}`: input requests the call's asker answers
-- (awaited on the handler thread; inside `ctx.all` they join the function's round).
local function ctx_input(name)
  local label = "ctx." .. name
  return function(spec)
    local co = running()
    local ok, r
    if handler_threads[co] then
      ok, r = call_made("input", name, spec)
      if ok then r = r[2] end
    elseif all_threads[co] then
      ok, r = real_yield(ASK, name, spec)
    else
      error(label .. " can only be called from the tool handler itself (not inside coroutine.create/wrap)", 2)
    end
    if not ok then error(r, 2) end
    return r
  end
end
local ctx_ask, ctx_roots, ctx_sample = ctx_input("ask"), ctx_input("roots"), ctx_input("sample")

-- `ctx.all(f1, f2, ...)`: runs each function on a coroutine of its own, concurrently: each
-- runs until it finishes or makes an input request; the requests made meanwhile are asked
-- together (one round: one multi-round step on 2026-07-28, concurrent requests on a
-- session), then the functions that asked go on with their answers, until all finished.
-- What else they await runs on the handler thread at once. Results (each function's first
-- value) come back in order; the first error ends them all and is raised.
local all_begin, all_end = host.all_begin, host.all_end
local function ctx_all(...)
  local me = running()
  if not handler_threads[me] then
    error("ctx.all can only be called from the tool handler itself (not inside coroutine.create/wrap or another ctx.all)", 2)
  end
  local fns = pack(...)
  for i = 1, fns.n do
    if type(fns[i]) ~= "function" then
      error("ctx.all: argument #" .. i .. " must be a function, got " .. type(fns[i]), 2)
    end
  end
  local ok, e = call_here(all_begin)
  if not ok then error(e, 2) end
  local threads, inputs, results, live = {}, {}, {}, fns.n
  for i = 1, fns.n do
    local co = real_create(fns[i])
    call_of[co] = call_of[me]
    all_threads[co] = true
    threads[i], inputs[i] = co, pack()
  end
  local function stop(err)
    for i = 1, fns.n do
      if threads[i] then real_close(threads[i]) end
    end
    call_here(all_end)
    error(err, 0)
  end
  while live > 0 do
    local round = {}
    for i = 1, fns.n do
      local co, input = threads[i], inputs[i]
      inputs[i] = nil
      while co and input do
        local r = pack(real_resume(co, unpack(input, 1, input.n)))
        input = nil
        if not r[1] then
          threads[i] = nil
          stop(r[2])
        elseif real_status(co) == "dead" then
          results[i], threads[i], co, live = r[2], nil, nil, live - 1
        elseif r[2] == AWAIT then
          input = pack(call_here(r[3], unpack(r, 4, r.n)))
        elseif r[2] == ASK then
          round[#round + 1] = { index = i, name = r[3], spec = r[4] }
        else
          -- Any other yield (the deadline hook's, above all) goes on to the handler's own
          -- poller, as it would from the handler itself.
          input = pack(real_yield(unpack(r, 2, r.n)))
        end
      end
    end
    if #round > 0 then
      local fine, answers = call_made("all_round", round)
      if not fine then stop(answers) end
      answers = answers[2]
      for j = 1, #round do
        local answer = answers[j]
        inputs[round[j].index] = pack(answer.ok, answer.value)
      end
    end
  end
  call_here(all_end)
  return unpack(results, 1, fns.n)
end

-- What every call's `ctx` offers besides its own values: the same functions for every call
-- (the __index of each call's hidden fields table; tool code never reaches this table).
local ctx_functions_mt = {
  __index = {
    progress = progress, call = ctx_call, ask = ctx_ask, roots = ctx_roots, sample = ctx_sample,
    all = ctx_all,
  },
}

-- The hidden half of a `ctx.caller`: its metatable, whose __index holds the values. Only
-- a call's own empty proxy table is ever handed to tool code, and the metatable (fields
-- and all) is out of its reach (`__metatable = false`, no debug library): so the host may
-- keep one and use it for every call of the same caller (see src/lua/vm/call_values.rs)
-- without showing any call anything of another. A scopes list is a table a handler may
-- change: the host never reuses the metatable of a caller with one.
local function caller_metatable(kind, id, client_id, scopes)
  return {
    __index = { kind = kind, id = id, client_id = client_id, scopes = scopes },
    __newindex = refuse_write,
    __metatable = false,
  }
end

-- Runs a handler on the current (async) thread as a new call, with a read-only `ctx`
-- (built here: a Lua table constructor is far cheaper than building it field by field
-- from Rust). Each call gets proxies of its own (a handler may `rawset` into its own
-- `ctx` or `ctx.caller`, and keep them past its call: another call never sees either).
--
-- `caller_mt`: the caller's metatable kept by the host; nil, and the caller's values
-- instead, when it has none.
local function invoke(handler, args, tool_name, tool_call_id, session_id, task_id, scope, prepared,
                      caller_mt, caller_kind, caller_id, client_id, scopes)
  local co = running()
  handler_threads[co] = true
  -- Read-only like ctx: a handler cannot pose as someone else to the tools it calls (they
  -- get the caller from the host, never from this table).
  local caller = real_setmetatable({},
    caller_mt or caller_metatable(caller_kind, caller_id, client_id, scopes))
  local ctx = real_setmetatable({}, {
    __index = real_setmetatable({
      tool_name = tool_name, tool_call_id = tool_call_id, session_id = session_id,
      task_id = task_id, scope = scope, caller = caller,
    }, ctx_functions_mt),
    __newindex = refuse_write,
    __metatable = false,
  })
  -- The call's token (see `call_of`): its own `ctx`, a table no other call has (one table
  -- fewer per call than a token of its own). Only the host compares tokens; what tool code
  -- does with its `ctx` cannot make another thread's token.
  call_of[co] = ctx
  -- `prepared`: what a task tool's `prepare` returned; other handlers get (args, ctx) only.
  if prepared ~= nil then
    return handler(args, ctx, prepared)
  end
  return handler(args, ctx)
end

-- `invoke` for a handler that cannot see a `ctx`: a Lua function of at most one parameter,
-- not variadic (the host checked). It is the same new call, without the `ctx` and `ctx.caller`
-- nobody could read; its token is a table of its own.
local function invoke_plain(handler, args)
  local co = running()
  handler_threads[co] = true
  call_of[co] = {}
  return handler(args)
end

local function owned(co, what)
  if type(co) == "thread" and created_by[co] ~= current_call() then
    error("coroutine." .. what .. ": this coroutine was not created by the current call", 3)
  end
end

local coroutine_lib = copy(coroutine)
coroutine_lib.create = function(f)
  local token = current_call()
  local co = real_create(f)
  call_of[co] = token
  created_by[co] = token
  return co
end
coroutine_lib.resume = function(co, ...)
  owned(co, "resume")
  return real_resume(co, ...)
end
coroutine_lib.close = function(co)
  owned(co, "close")
  return real_close(co)
end
-- wrap on top of the checked create/resume, so a wrapped function kept by another call
-- cannot resume this call's coroutine either.
coroutine_lib.wrap = function(f)
  local co = coroutine_lib.create(f)
  return function(...)
    owned(co, "wrap")
    local r = pack(real_resume(co, ...))
    if r[1] then return unpack(r, 2, r.n) end
    real_close(co)
    local e = r[2]
    if type(e) == "string" then error(e, 2) end
    error(e, 0)
  end
end

-- No finalizers: a `__gc` metamethod would run tool code outside any call (on whichever
-- call happens to trigger a collection, or while the VM closes) where no deadline and no
-- identity applies.
local function safe_setmetatable(t, mt)
  if type(mt) == "table" and rawget(mt, "__gc") ~= nil then
    error("setmetatable: metatables with __gc (finalizers) are not allowed in the sandbox", 2)
  end
  return real_setmetatable(t, mt)
end

-- xpcall whose message handler runs as ordinary code after the error unwound: Lua runs a
-- real message handler inside error handling, where a looping handler escapes the deadline
-- hook (raising there only re-enters the handler). The handler sees the error value as
-- usual; there is no debug library in the sandbox to inspect the failing stack anyway.
local real_pcall = pcall
local function safe_xpcall(f, handler, ...)
  if type(handler) ~= "function" then
    error("bad argument #2 to 'xpcall' (function expected, got " .. type(handler) .. ")", 2)
  end
  local r = pack(real_pcall(f, ...))
  if r[1] then return unpack(r, 1, r.n) end
  local _, handled = real_pcall(handler, r[2])
  return false, handled
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
  "rawget", "rawlen", "rawset", "select", "tonumber", "tostring", "type", "_VERSION",
}

-- Standard libraries every environment gets; host-API tables need a capability.
local base_libraries = {
  string = true, table = true, math = true, utf8 = true, coroutine = true, os = true,
}

-- Errors from awaiting host functions come back through mlua's async glue, positioned in
-- it; they are raised again at the tool's own call site (error level 2) instead.
local error_text = host.error_text
local function strip_glue(e)
  if type(e) == "userdata" then e = error_text(e) end
  if type(e) ~= "string" then return e end
  return (e:gsub("^__mlua_async_poll:%d+: ", ""))
end
function call_here(fn, ...)
  local r = pack(pcall(fn, ...))
  if not r[1] then return false, strip_glue(r[2]) end
  return true, r
end

-- The pattern functions on the host's deadline-checking matcher, raising plain messages
-- like stock Lua's (no position: stock errors come from a C function). Installed into the
-- VM's own string table too, which is what method calls on strings (`s:find(p)`) index.
local function plain_errors(fn)
  return function(...)
    local ok, r = call_here(fn, ...)
    if not ok then error(r, 0) end
    return unpack(r, 2, r.n)
  end
end
local patterns = host.patterns
string.find = plain_errors(patterns.find)
string.match = plain_errors(patterns.match)
string.gsub = plain_errors(patterns.gsub)
local raw_gmatch = plain_errors(patterns.gmatch)
string.gmatch = function(...) return plain_errors(raw_gmatch(...)) end

local string_lib = copy(string)
string_lib.dump = nil -- bytecode never enters or leaves the sandbox

-- Code outside a handler (a file's top level, above all) that reads the world is noted:
-- such a file may register differently when run again, so its registrations are never
-- taken from the registration cache.
local note_impure = host.note_impure
local function noting(fn)
  return function(...)
    if not awaiting_thread() then note_impure() end
    return fn(...)
  end
end
local pure_modules = { json = true, log = true }
local write_refusal = host.write_refusal
local os_lib = { time = noting(os.time), clock = noting(os.clock), date = noting(os.date) }
local math_lib = copy(math)
math_lib.random = noting(math.random)
math_lib.randomseed = noting(math.randomseed)

-- The host-API modules, assembled from the host's table (see src/lua/api/mod.rs). A
-- handler-only function and the in-handler variant of another await: made at first use.
local host_modules = {}
for module, functions in pairs(host.api.api) do
  local lib = {}
  local only = host.api.handler_only[module] or {}
  local async = host.api.async[module] or {}
  local reads_world = not pure_modules[module]
  local writes = host.api.writes[module] or {}
  for name, fn in pairs(functions) do
    -- A write in a call served as read-only is refused before it starts (the host's
    -- answer names the tool and the function; nil when the call may write).
    local write_label = writes[name] and (module .. "." .. name)
    if only[name] then
      local label = module .. "." .. name
      lib[name] = function(...)
        if write_label then
          local refused = write_refusal(write_label)
          if refused then error(refused, 2) end
        end
        if not awaiting_thread() then
          error(label .. " can only be called from a tool handler (not at load time, in a probe or inside coroutine.create/wrap)", 2)
        end
        local ok, r = await_made(label, ...)
        if not ok then error(r, 2) end
        return unpack(r, 2, r.n)
      end
    elseif async[name] then
      local label = module .. "." .. name
      lib[name] = function(...)
        if write_label then
          local refused = write_refusal(write_label)
          if refused then error(refused, 2) end
        end
        if not awaiting_thread() then
          if reads_world then note_impure() end
          return fn(...)
        end
        local ok, r = await_made(label, ...)
        if not ok then error(r, 2) end
        return unpack(r, 2, r.n)
      end
    elseif type(fn) == "function" then
      -- Raised again as a plain message (a caught error is the text the author expects, not
      -- mlua's wrapped error with a traceback); it already names the tool's file:line.
      lib[name] = function(...)
        if write_label then
          local refused = write_refusal(write_label)
          if refused then error(refused, 2) end
        end
        if reads_world and not awaiting_thread() then note_impure() end
        local ok, r = call_here(fn, ...)
        if not ok then error(r, 0) end
        return unpack(r, 2, r.n)
      end
    else
      lib[name] = fn
    end
  end
  host_modules[module] = lib
end

-- Values every environment may share as they are (functions are immutable).
local shared = {}
for _, name in ipairs(base_names) do shared[name] = G[name] end
shared.setmetatable = safe_setmetatable
shared.xpcall = safe_xpcall
shared.collectgarbage = safe_collectgarbage
shared.print = host.print

-- Library tables: each environment gets its own copy, made on first use.
local libraries = {
  string = string_lib, table = table, math = math_lib, utf8 = utf8,
  coroutine = coroutine_lib, os = os_lib,
}
for name, lib in pairs(host_modules) do libraries[name] = lib end

-- Library functions bound to the environment's identity: `env.get` answers with the
-- grants of the file (or module) whose environment it is; `store` works in the namespace of
-- its trust domain (`builtin` or `plugin:<id>`), fixed here where no tool code can reach it.
local env_get = host_modules.env.get
local store_raw = host_modules.store
local function bind(key, lib, identity, domain)
  if key == "env" then
    lib.get = function(name) return env_get(identity, name) end
  elseif key == "store" then
    local ns = domain or "builtin"
    for name, raw in pairs(store_raw) do
      -- A tail call: a host error raised at level 2 names the tool's line, not this one.
      lib[name] = function(...) return raw(ns, ...) end
    end
  end
  return lib
end

-- What a file gets for a host-API module it was not granted: every use raises, naming the
-- capability and how to grant it.
local function denied(module, hint)
  local message = "capability '" .. module .. "' is not granted" .. hint
  return real_setmetatable({}, {
    __index = function() error(message, 2) end,
    __newindex = function() error(message, 2) end,
    __metatable = false,
  })
end

local rawset = rawset

-- Builds a fresh environment. `api` names the host-API tables this file may use (nil: all);
-- `require_fn` resolves modules for this file; `registry` is the file's own registration
-- binding; `hint` says how to grant a missing capability; `identity` is the file's index
-- (nil for a module), whose grants `env.get` applies; `domain` is its trust domain (the
-- `store` namespace).
--
-- Globals resolve lazily through __index: a shared base function is stored into the
-- environment on first use; a library table is *copied* on first use, so whatever the file
-- does to its copy (even with rawset) stays inside the file. Most files touch a handful of
-- libraries, so this keeps loading cheap. The metatable is hidden (__metatable = false).
local function make_env(api, require_fn, registry, hint, identity, domain)
  local env = {}
  env.registry = registry
  env.require = require_fn
  -- Text chunks only; a chunk without an explicit environment sees this file's globals.
  -- The text passes the same pre-scan as tool files: Lua's compiler runs outside any
  -- deadline and is quadratic in long and/or chains.
  env.load = function(chunk, name, _mode, chunk_env)
    if chunk_env == nil then chunk_env = env end
    if type(chunk) == "function" then
      local parts = {}
      while true do
        local part = chunk()
        if part == nil or part == "" then break end
        if type(part) ~= "string" then return nil, "reader function must return a string" end
        parts[#parts + 1] = part
      end
      chunk = table_concat(parts)
    end
    if type(chunk) == "string" then
      local refused = prescan(chunk, name)
      if refused then return nil, refused end
    end
    return real_load(chunk, name, "t", chunk_env)
  end
  env._G = env
  real_setmetatable(env, {
    __metatable = false,
    __index = function(t, key)
      local value = shared[key]
      if value == nil then
        local lib = libraries[key]
        if lib == nil then return nil end
        if api == nil or api[key] or base_libraries[key] then
          value = bind(key, copy(lib), identity, domain)
        else
          value = denied(key, hint or "")
        end
      end
      rawset(t, key, value)
      return value
    end,
  })
  return env
end

return make_env, invoke, begin_sync, caller_metatable, invoke_plain
