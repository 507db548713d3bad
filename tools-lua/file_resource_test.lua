test("the file resource reads a text file with its MIME type", function(t)
  local path = t.write("src/main.rs", "fn main() {}\n")
  local read = t.read("file://" .. path)
  t.eq(read, { { uri = "file://" .. path, mimeType = "text/x-rust", text = "fn main() {}\n" } })
end)

test("the file resource reads a binary file as a base64 blob", function(t)
  local path = t.write("logo.png", "\137PNG\0\1")
  t.eq(t.read("file://" .. path)[1].blob, "iVBORwAB")
  t.eq(t.read("file://" .. path)[1].mimeType, "image/png")
end)

test("the file resource decodes percent-encoded paths", function(t)
  local path = t.write("my notes.txt", "hi")
  t.eq(t.read("file://" .. t.fs("my%20notes.txt"))[1].text, "hi")
end)

test("a missing file is resource_not_found", function(t)
  t.error_type(t.read("file://" .. t.fs("nope.txt")), "resource_not_found")
end)

test("a file outside the roots is refused", function(t)
  local read = t.read("file:///etc/passwd")
  t.error_type(read, "handler_error")
  t.match(read.message, "outside the fs roots")
end)

test("a '..' in the path is refused", function(t)
  t.write("a/x.txt", "x")
  local read = t.read("file://" .. t.fs("a/../a/x.txt"))
  t.error_type(read, "handler_error")
  t.match(read.message, "'%.%.' is not allowed")
end)

test("a file over 1 MiB is refused with its size", function(t)
  local path = t.write("big.txt", string.rep("x", 1024 * 1024 + 1))
  local read = t.read("file://" .. path)
  t.error_type(read, "handler_error")
  t.match(read.message, "1048577 bytes")
end)

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
