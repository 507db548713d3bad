test("calc follows precedence", function(t)
  t.eq(t.call("calc", { expression = "(2 + 3) * 4 ^ 2 / sqrt(16)" }), "20")
end)

test("calc accepts ** for powers", function(t)
  t.eq(t.call("calc", { expression = "2 ** 10" }), "1024")
end)

test("calc rejects what is not arithmetic", function(t)
  t.error_type(t.call("calc", { expression = "os.exit()" }), "handler_error")
end)
