-- The tools the official MCP conformance suite (@modelcontextprotocol/conformance) calls,
-- written as ordinary Lua tools; scripts/conformance.sh serves them over streamable HTTP.
local PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
local WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="

local tools = {}
local function tool(name, description, handler, parameters)
  tools[#tools + 1] = { name = name, description = description, handler = handler,
                        parameters = parameters or { type = "object" } }
end

tool("test_simple_text", "Returns simple text", function()
  return "This is a simple text response for testing."
end)

tool("test_image_content", "Returns an image", function()
  return { _multimodal = true, text_summary = "a red pixel",
    content = { { type = "image", data = PNG, mime_type = "image/png" } } }
end)

tool("test_audio_content", "Returns audio", function()
  return { _multimodal = true, text_summary = "silence",
    content = { { type = "audio", data = WAV, mime_type = "audio/wav" } } }
end)

tool("test_embedded_resource", "Returns an embedded resource", function()
  return { _multimodal = true, text_summary = "a resource",
    content = { { type = "resource", uri = "test://embedded-resource", mime_type = "text/plain",
                  text = "This is an embedded resource content." } } }
end)

tool("test_multiple_content_types", "Returns text, an image and a resource", function()
  return { _multimodal = true, text_summary = "mixed", content = {
    { type = "text", text = "Multiple content types test:" },
    { type = "image", data = PNG, mime_type = "image/png" },
    { type = "resource", uri = "test://mixed-content-resource", mime_type = "application/json",
      text = json.encode({ test = "data", value = 123 }) },
  } }
end)

tool("test_tool_with_logging", "Logs three lines while it runs", function()
  log.info("Tool execution started")
  time.sleep(50)
  log.info("Tool processing data")
  time.sleep(50)
  log.info("Tool execution completed")
  return "Logging test completed"
end)

tool("test_tool_with_progress", "Reports progress 0, 50, 100 of 100", function(_, ctx)
  ctx.progress(0, 100)
  time.sleep(50)
  ctx.progress(50, 100)
  time.sleep(50)
  ctx.progress(100, 100)
  return "Progress test completed"
end)

-- SSE polling (SEP-1699, server-sse-polling): runs past [serve] sse_poll_after_ms (set to
-- 1000 by scripts/conformance.sh), so the server ends the POST's stream with a priming event
-- and the suite resumes with GET + Last-Event-ID to get this answer. Nothing here touches
-- the transport: any tool that long is treated the same.
tool("test_reconnection", "Runs 1.5 s, past the server's SSE polling time", function()
  time.sleep(1500)
  return "Reconnection test completed"
end)

tool("test_error_handling", "Always fails", function()
  error("This tool intentionally returns an error for testing", 0)
end)

tool("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", function(args)
  return args
end, {
  ["$schema"] = "https://json-schema.org/draft/2020-12/schema",
  type = "object",
  ["$defs"] = {
    address = { ["$anchor"] = "addressDef", type = "object",
                properties = { street = { type = "string" }, city = { type = "string" } } },
  },
  properties = {
    name = { type = "string" },
    address = { ["$ref"] = "#/$defs/address" },
    contactMethod = { type = "string", enum = { "phone", "email" } },
    phone = { type = "string" },
    email = { type = "string" },
  },
  -- The 2026-07-28 vocabulary (SEP-2106): composition and conditionals survive the listing.
  allOf = { { anyOf = { { required = { "phone" } }, { required = { "email" } } } } },
  ["if"] = { properties = { contactMethod = { const = "phone" } }, required = { "contactMethod" } },
  ["then"] = { required = { "phone" } },
  ["else"] = { required = { "email" } },
  additionalProperties = false,
})

-- http-custom-header-server-validation (2026-07-28): a parameter HTTP clients mirror into
-- the `Mcp-Param-Region` header, which the server checks against the argument.
tool("test_custom_header", "Echoes the region it was routed by", function(args)
  return "region: " .. args.region
end, {
  type = "object",
  properties = { region = { type = "string", ["x-mcp-header"] = "Region" } },
  required = { "region" },
})

-- server-stateless (2026-07-28) opens `subscriptions/listen` and calls this to change the
-- tool list: it writes a new tool file into tools-lua/ under the working directory, which
-- scripts/conformance.sh serves too, with --watch. Each call adds a tool of its own.
tool("test_trigger_tool_change", "Adds a tool (the server reloads and tells subscribers)",
  function()
    -- Request ids repeat (the suite sends id 1 each time): number the tools instead.
    local name = "triggered_" .. (#fs.list("tools-lua") + 1)
    fs.write("tools-lua/" .. name .. ".lua", string.format(
      "registry.register{ name = %q, toolset = \"live\",\n" ..
      "  schema = { description = \"Added by test_trigger_tool_change\", parameters = { type = \"object\" } },\n" ..
      "  handler = function() return \"added\" end }\n", name))
    return "added " .. name
  end)

tool("test_trigger_prompt_change", "Adds a prompt (the server reloads and tells subscribers)",
  function()
    local name = "triggered_prompt_" .. (#fs.list("tools-lua") + 1)
    fs.write("tools-lua/" .. name .. ".lua", string.format(
      "registry.prompt{ name = %q, toolset = \"live\",\n" ..
      "  description = \"Added by test_trigger_prompt_change\",\n" ..
      "  render = function() return \"added\" end }\n", name))
    return "added " .. name
  end)

for _, t in ipairs(tools) do
  registry.register{
    name = t.name,
    toolset = "conformance",
    schema = { description = t.description, parameters = t.parameters },
    handler = t.handler,
  }
end
