test("code_review embeds the file as a resource", function(t)
  local path = t.write("lib.lua", "return 1\n")
  local prompt = t.prompt("code_review", { path = "lib.lua", focus = "naming" })
  t.eq(prompt.messages[1].content, {
    type = "resource",
    resource = { uri = "file://" .. path, mimeType = "text/x-lua", text = "return 1\n" },
  })
  t.match(prompt.messages[2].content.text, "Focus on naming")
end)

test("code_review needs its path argument", function(t)
  t.error_type(t.prompt("code_review", {}), "invalid_arguments")
end)

test("code_review names a missing file", function(t)
  local rendered = t.prompt("code_review", { path = "nope.lua" })
  t.error_type(rendered, "handler_error")
  t.match(rendered.message, "no file at nope.lua")
end)
