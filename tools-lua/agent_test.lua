test("todo and memory belong to the agent loop", function(t)
  t.error_type(t.call("todo", { action = "list" }), "agent_loop")
  t.error_type(t.call("memory", { action = "recall" }), "agent_loop")
end)
