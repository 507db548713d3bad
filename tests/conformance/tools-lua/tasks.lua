-- The tools the conformance suite's Tasks-extension scenarios (tasks-*) call, as ordinary
-- Lua task tools (docs/mcp-server.md#tasks).

registry.register{ name = "greet", toolset = "conformance_tasks",
  schema = { description = "Greets (never a task)", parameters = { type = "object",
    properties = { name = { type = "string" } } } },
  handler = function(args) return "Hello, " .. tostring(args.name or "World") .. "!" end }

-- `seconds` of sleep, then a result; a task whenever the client declares the extension.
registry.register{ name = "slow_compute", toolset = "conformance_tasks", task = "optional",
  timeout_ms = 120000,
  schema = { description = "Sleeps for the given seconds, then answers", parameters = {
    type = "object",
    properties = { seconds = { type = "number" }, label = { type = "string" } } } },
  handler = function(args)
    local seconds = math.max(0, math.min(tonumber(args.seconds) or 0, 90))
    if seconds > 0 then time.sleep(math.floor(seconds * 1000)) end
    return "computed " .. tostring(args.label or "") .. " after " .. seconds .. " s"
  end }

-- Always a tool error (completed, isError); `required`: a client without the extension is
-- refused (-32021) before it runs.
registry.register{ name = "failing_job", toolset = "conformance_tasks", task = "required",
  schema = { description = "Fails as a tool", parameters = { type = "object" } },
  handler = function()
    time.sleep(200)
    error("the job failed", 0)
  end }

-- The host ends it (its deadline): the task fails with a JSON-RPC error.
registry.register{ name = "protocol_error_job", toolset = "conformance_tasks", task = "optional",
  timeout_ms = 300,
  schema = { description = "Overruns its deadline", parameters = { type = "object" } },
  handler = function() time.sleep(60000) return "never" end }

-- Asks once while it runs as a task (input_required, answered with tasks/update).
registry.register{ name = "confirm_delete", toolset = "conformance_tasks", task = "optional",
  timeout_ms = 120000,
  schema = { description = "Asks before deleting a file", parameters = { type = "object",
    properties = { filename = { type = "string" } } } },
  handler = function(args, ctx)
    local answer = ctx.ask{ message = "Delete " .. tostring(args.filename) .. "?",
      schema = { type = "object", properties = { confirm = { type = "boolean" } } } }
    if answer.action == "accept" then return "deleted " .. tostring(args.filename) end
    return "kept " .. tostring(args.filename)
  end }

-- Asks two questions at once (two keys pending together).
registry.register{ name = "multi_input", toolset = "conformance_tasks", task = "optional",
  timeout_ms = 120000,
  schema = { description = "Asks two questions at once", parameters = { type = "object" } },
  handler = function(_, ctx)
    local schema = { type = "object", properties = { name = { type = "string" },
      confirm = { type = "boolean" } } }
    local first, second = ctx.all(
      function() return ctx.ask{ key = "first", message = "First?", schema = schema } end,
      function() return ctx.ask{ key = "second", message = "Second?", schema = schema } end)
    return "answers: " .. tostring(first.content and first.content.name) .. ", "
      .. tostring(second.content and second.content.name)
  end }

-- Asks for a name in input-request rounds (prepare), then becomes a task that greets it.
registry.register{ name = "test_tool_with_task", toolset = "conformance_tasks", task = "required",
  schema = { description = "Asks a name, then greets it as a task", parameters = { type = "object" } },
  prepare = function(_, ctx)
    local answer = ctx.ask{ key = "user_name", message = "Your name?",
      schema = { type = "object", properties = { name = { type = "string" } } } }
    return answer.content and answer.content.name or "nobody"
  end,
  handler = function(_, _, name) return "Hello, " .. name .. "!" end }
