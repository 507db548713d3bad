test("run_command is unavailable until [sandbox] commands allows a program", function(t)
  local out = t.call("run_command", { argv = { "ls" } })
  t.error_type(out, "unavailable")
  t.contains(out.error, "[sandbox] commands")
end)

test("run_command reports the exit code and both outputs", function(t)
  t.proc{ { argv = { "git", "status" }, code = 1, stdout = "on branch main", stderr = "warn" } }
  t.eq(t.call("run_command", { argv = { "git", "status" } }),
    "exit code: 1\nstdout:\non branch main\nstderr:\nwarn")
end)

test("run_command says when the program timed out", function(t)
  t.proc{ { argv = { "sleep" }, timed_out = true } }
  t.eq(t.call("run_command", { argv = { "sleep", "100" } }), "timed out; the program was stopped")
end)
