-- todo and memory: schemas for the model; the embedding agent loop handles the calls
-- itself (they are in agent_loop_tools, so the host refuses them with agent_loop).
registry.register{
  name = "todo",
  toolset = "agent",
  annotations = {
    title = "Task list", read_only = false,
    destructive = false, idempotent = false, open_world = false,
  },
  emoji = "📝",
  schema = {
    description = "Keep a task list for the current session: add, complete or list items",
    parameters = {
      type = "object",
      properties = {
        action = { type = "string", enum = { "add", "complete", "list" } },
        item = { type = "string" },
      },
      required = { "action" },
    },
  },
  handler = function() error("todo is handled by the agent loop", 0) end,
}

registry.register{
  name = "memory",
  toolset = "agent",
  annotations = {
    title = "Memory", read_only = false,
    destructive = true, idempotent = false, open_world = false,
  },
  emoji = "🧠",
  schema = {
    description = "Remember or recall facts across sessions",
    parameters = {
      type = "object",
      properties = {
        action = { type = "string", enum = { "remember", "recall", "forget" } },
        key = { type = "string" },
        value = { type = "string" },
      },
      required = { "action" },
    },
  },
  handler = function() error("memory is handled by the agent loop", 0) end,
}
