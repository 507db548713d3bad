-- The resources and prompts the official MCP conformance suite reads and renders, written
-- as ordinary Lua registrations; scripts/conformance.sh serves them with the tools.
local PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

registry.resource{
  uri = "test://static-text", name = "static-text", mime_type = "text/plain",
  description = "A static text resource",
  read = function() return "This is the content of the static text resource." end,
}

registry.resource{
  uri = "test://static-binary", name = "static-binary", mime_type = "image/png",
  description = "A static binary resource",
  read = function() return { blob = PNG } end,
}

registry.resource{
  uri = "test://watched-resource", name = "watched-resource", mime_type = "text/plain",
  description = "A resource clients may subscribe to",
  read = function() return "Watched resource content." end,
}

registry.resource{
  uri_template = "test://template/{id}/data", name = "template-data",
  mime_type = "application/json", description = "Data by id",
  read = function(params)
    return json.encode({ id = params.id, templateTest = true, data = "Data for ID: " .. params.id })
  end,
  complete = { id = function(prefix) return { prefix .. "1", prefix .. "2" } end },
}

registry.prompt{
  name = "test_simple_prompt", description = "A prompt without arguments",
  render = function() return "This is a simple prompt for testing." end,
}

registry.prompt{
  name = "test_prompt_with_arguments", description = "A prompt with two arguments",
  arguments = {
    { name = "arg1", description = "First test argument", required = true },
    { name = "arg2", description = "Second test argument", required = true },
  },
  render = function(args)
    return ("Prompt with arguments: arg1='%s', arg2='%s'"):format(args.arg1, args.arg2)
  end,
  complete = { arg1 = function(prefix) return { prefix .. "is", prefix .. "k" } end },
}

registry.prompt{
  name = "test_prompt_with_embedded_resource", description = "A prompt embedding a resource",
  arguments = { { name = "resourceUri", description = "URI of the resource to embed", required = true } },
  render = function(args)
    return {
      { role = "user", content = { type = "resource", resource = {
        uri = args.resourceUri, mimeType = "text/plain",
        text = "Embedded resource content for testing." } } },
      { role = "user", content = "Please process the embedded resource above." },
    }
  end,
}

registry.prompt{
  name = "test_prompt_with_image", description = "A prompt with an image",
  render = function()
    return {
      { role = "user", content = { type = "image", data = PNG, mimeType = "image/png" } },
      { role = "user", content = "Please analyze the image above." },
    }
  end,
}

-- input-required-result-non-tool-request (2026-07-28): a prompt whose render asks, in
-- input-request rounds like a tool handler.
registry.prompt{
  name = "test_input_required_result_prompt", description = "A prompt that asks for context",
  render = function(_, ctx)
    local r = ctx.ask{ key = "user_context", message = "What context should the prompt use?",
      schema = { properties = { context = { type = "string" } }, required = { "context" } } }
    local context = (r.content or {}).context or "none"
    return "Use this context: " .. tostring(context)
  end,
}
