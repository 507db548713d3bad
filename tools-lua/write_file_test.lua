test("write_file creates missing folders", function(t)
  t.match(t.call("write_file", { path = "a/b/c.txt", content = "hi" }), "^wrote 2 bytes")
  t.eq(t.call("read_file", { path = "a/b/c.txt" }), "1|hi")
end)
