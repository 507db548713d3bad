-- echo: returns its arguments as JSON. Handy for checking the host end to end.
registry.register{
  name = "echo",
  toolset = "debug",
  annotations = { title = "Echo", read_only = true, open_world = false },
  emoji = "🔁",
  parallel_safe = true,
  schema = {
    description = "Return the arguments unchanged, as JSON",
    parameters = {
      type = "object",
      properties = {
        text = { type = "string", description = "Any text" },
      },
      required = {},
    },
  },
  handler = function(args)
    return args
  end,
}
