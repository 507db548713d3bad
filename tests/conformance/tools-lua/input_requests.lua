-- The conformance suite's tools that ask the client (elicitation, sampling, roots), written
-- as ordinary Lua tools with ctx.ask / ctx.sample / ctx.roots: awaited server->client
-- requests on 2025-11-25 sessions, multi-round input requests (SEP-2322) on 2026-07-28.
local tools = {}
local function tool(name, description, needs, handler, parameters)
  tools[#tools + 1] = { name = name, description = description, needs = needs, handler = handler,
                        parameters = parameters or { type = "object" } }
end

local function text_of(content)
  if type(content) == "string" then return content end
  return json.encode(content)
end

local NAME_FORM = { properties = { name = { type = "string" } }, required = { "name" } }

-- 2025-11-25: tools-call-sampling, tools-call-elicitation, elicitation-sep1034-defaults,
-- elicitation-sep1330-enums.
tool("test_sampling", "Asks the client's model", { "sampling" }, function(args, ctx)
  local r = ctx.sample{ messages = { { role = "user", content = args.prompt } }, max_tokens = 100 }
  return "LLM response: " .. text_of(r.content)
end, { type = "object", properties = { prompt = { type = "string" } }, required = { "prompt" } })

tool("test_elicitation", "Asks the user", { "elicitation" }, function(args, ctx)
  local r = ctx.ask{ message = args.message, schema = {
    properties = {
      username = { type = "string", description = "User's response" },
      email = { type = "string", description = "User's email address" },
    },
    required = { "username", "email" } } }
  return "User response: action=" .. r.action .. ", content=" .. json.encode(r.content or {})
end, { type = "object", properties = { message = { type = "string" } }, required = { "message" } })

tool("test_elicitation_sep1034_defaults", "A form with defaults", { "elicitation" }, function(_, ctx)
  local r = ctx.ask{ message = "Please review your information", schema = { properties = {
    name = { type = "string", default = "John Doe" },
    age = { type = "integer", default = 30 },
    score = { type = "number", default = 95.5 },
    status = { type = "string", enum = { "active", "inactive", "pending" }, default = "active" },
    verified = { type = "boolean", default = true },
  } } }
  return "Elicitation completed: action=" .. r.action .. ", content=" .. json.encode(r.content or {})
end)

tool("test_elicitation_sep1330_enums", "A form with every enum shape", { "elicitation" }, function(_, ctx)
  local r = ctx.ask{ message = "Please choose", schema = { properties = {
    untitledSingle = { type = "string", enum = { "option1", "option2", "option3" } },
    titledSingle = { type = "string", oneOf = {
      { const = "value1", title = "First Option" },
      { const = "value2", title = "Second Option" },
      { const = "value3", title = "Third Option" } } },
    legacyEnum = { type = "string", enum = { "opt1", "opt2", "opt3" },
      enumNames = { "Option One", "Option Two", "Option Three" } },
    untitledMulti = { type = "array", items = { type = "string", enum = { "option1", "option2", "option3" } } },
    titledMulti = { type = "array", items = { anyOf = {
      { const = "value1", title = "First Choice" },
      { const = "value2", title = "Second Choice" },
      { const = "value3", title = "Third Choice" } } } },
  } } }
  return "Elicitation completed: action=" .. r.action .. ", content=" .. json.encode(r.content or {})
end)

-- 2026-07-28: input-required-result-* (SEP-2322).
tool("test_input_required_result_elicitation", "One question", { "elicitation" }, function(_, ctx)
  local r = ctx.ask{ key = "user_name", message = "What is your name?", schema = NAME_FORM }
  if r.action ~= "accept" then return "No name (" .. r.action .. ")" end
  return "Hello, " .. r.content.name .. "!"
end)

tool("test_input_required_result_sampling", "One sampling request", { "sampling" }, function(_, ctx)
  local r = ctx.sample{ key = "capital_question",
    messages = { { role = "user", content = "What is the capital of France?" } }, max_tokens = 100 }
  return "Sampled: " .. text_of(r.content)
end)

tool("test_input_required_result_list_roots", "The client's roots", { "roots" }, function(_, ctx)
  local uris = {}
  for _, root in ipairs(ctx.roots{ key = "client_roots" }) do uris[#uris + 1] = root.uri end
  return "Roots: " .. table.concat(uris, ", ")
end)

tool("test_input_required_result_request_state", "A question and the state", { "elicitation" }, function(_, ctx)
  local r = ctx.ask{ key = "confirm", message = "Please confirm",
    schema = { properties = { ok = { type = "boolean" } }, required = { "ok" } } }
  -- Answers reach the handler only through the verified requestState.
  return "state-ok: action=" .. r.action
end)

tool("test_input_required_result_multiple_inputs", "Three requests in one round",
  { "elicitation", "sampling", "roots" }, function(_, ctx)
  local who, greeting, roots = ctx.all(
    function() return ctx.ask{ key = "user_name", message = "What is your name?", schema = NAME_FORM } end,
    function()
      return ctx.sample{ key = "greeting",
        messages = { { role = "user", content = "Generate a greeting" } }, max_tokens = 50 }
    end,
    function() return ctx.roots{ key = "client_roots" } end)
  local name = who.action == "accept" and who.content.name or who.action
  return "Name: " .. name .. "; greeting: " .. text_of(greeting.content) .. "; roots: " .. #roots
end)

tool("test_input_required_result_tampered_state", "A question whose state must verify", { "elicitation" }, function(_, ctx)
  local r = ctx.ask{ key = "confirm", message = "Please confirm",
    schema = { properties = { ok = { type = "boolean" } }, required = { "ok" } } }
  return "confirmed: " .. r.action
end)

-- No `needs`: it asks what the client declared; an undeclared request is answered as if
-- nobody could be asked (cancel), so only the declared ones reach the client.
tool("test_input_required_result_capabilities", "Asks what the client supports", nil, function(_, ctx)
  local answer, sampled = ctx.all(
    function() return ctx.ask{ key = "user_name", message = "What is your name?", schema = NAME_FORM } end,
    function()
      local ok, r = pcall(ctx.sample, { key = "greeting",
        messages = { { role = "user", content = "Generate a greeting" } }, max_tokens = 50 })
      return ok and text_of(r.content) or "no sampling"
    end)
  return "asked: " .. answer.action .. "; sampled: " .. sampled
end)

tool("test_input_required_result_multi_round", "Two questions, one round each", { "elicitation" }, function(_, ctx)
  local first = ctx.ask{ key = "step1", message = "Step 1: What is your name?", schema = NAME_FORM }
  local second = ctx.ask{ key = "step2", message = "Step 2: What is your favorite color?",
    schema = { properties = { color = { type = "string" } }, required = { "color" } } }
  local name = first.action == "accept" and first.content.name or first.action
  local color = second.action == "accept" and second.content.color or second.action
  return name .. " likes " .. color
end)

-- server-stateless (SEP-2575): called without the sampling capability declared, `needs`
-- refuses it with -32021 (HTTP 400) before the handler runs.
tool("test_missing_capability", "Needs the client's sampling", { "sampling" }, function(_, ctx)
  local r = ctx.sample{ messages = { { role = "user", content = "Say hello" } }, max_tokens = 20 }
  return "Sampled: " .. text_of(r.content)
end)

for _, t in ipairs(tools) do
  registry.register{ name = t.name, toolset = "conformance", needs = t.needs,
    schema = { description = t.description, parameters = t.parameters }, handler = t.handler }
end
