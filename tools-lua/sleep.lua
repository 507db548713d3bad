-- sleep: wait without blocking the VM (other calls run meanwhile), reporting progress.
registry.register{
  name = "sleep",
  toolset = "debug",
  annotations = { title = "Sleep", read_only = true, open_world = false },
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
  handler = function(a, ctx)
    -- Sleep in steps (at most 20) and report each one: MCP clients that asked for progress
    -- see it move.
    local step = math.max(50, a.ms // 20)
    local done = 0
    while done < a.ms do
      local now = math.min(step, a.ms - done)
      time.sleep(now)
      done = done + now
      ctx.progress(done, a.ms, "slept " .. done .. " of " .. a.ms .. " ms")
    end
    return "slept " .. a.ms .. " ms"
  end,
}
