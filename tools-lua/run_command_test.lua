test("run_command is unavailable until [sandbox] commands allows a program", function(t)
  t.error_type(t.call("run_command", { argv = { "ls" } }), "unavailable")
end)
