-- sleep: wait without blocking the VM (other calls run meanwhile).
registry.register{
  name = "sleep",
  toolset = "debug",
  emoji = "😴",
  is_async = true,
  parallel_safe = true,
  schema = {
    description = "Wait for a number of milliseconds, then return",
    parameters = {
      type = "object",
      properties = { ms = { type = "integer", minimum = 0, maximum = 600000 } },
      required = { "ms" },
    },
  },
  handler = function(a)
    time.sleep(a.ms)
    return "slept " .. a.ms .. " ms"
  end,
}
