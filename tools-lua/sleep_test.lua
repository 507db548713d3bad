test("sleep waits and says so", function(t)
  t.eq(t.call("sleep", { ms = 10 }), "slept 10 ms")
end)
