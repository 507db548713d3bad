test("echo returns its arguments as JSON", function(t)
  t.eq(t.call("echo", { text = "hello" }), { text = "hello" })
end)

test("echo coerces nothing it does not know", function(t)
  t.eq(t.call("echo", { n = 1 }), { n = 1 })
end)
