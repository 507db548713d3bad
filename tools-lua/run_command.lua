-- run_command: run an allowed program (no shell). Unavailable until [sandbox] commands
-- lists at least one program.
registry.register{
  name = "run_command",
  toolset = "shell",
  annotations = {
    title = "Run a command", read_only = false,
    destructive = true, idempotent = false, open_world = true,
  },
  emoji = "💻",
  is_async = true,
  max_result_size_chars = 50000,
  -- proc.run refuses unlisted programs: with none listed the tool is useless.
  check_fn = function()
    return #proc.allowed() > 0,
      "no program is allowed to run: list them in [sandbox] commands (toolhost.toml)"
  end,
  schema = {
    description = "Run a program with arguments (no shell; only programs the operator allowed)",
    parameters = {
      type = "object",
      properties = {
        argv = { type = "array", items = { type = "string" }, minItems = 1,
                 description = "Program and arguments, e.g. [\"git\", \"status\"]" },
        cwd = { type = "string", description = "Working folder (default: the working directory)" },
        timeout_ms = { type = "integer", minimum = 1, description = "Default 30000" },
        stdin = { type = "string" },
      },
      required = { "argv" },
    },
  },
  handler = function(a)
    local r = proc.run{ argv = a.argv, cwd = a.cwd, timeout_ms = a.timeout_ms, stdin = a.stdin }
    if r.timed_out then
      return "timed out; the program was stopped"
    end
    local parts = { "exit code: " .. tostring(r.code) }
    if r.stdout ~= "" then parts[#parts + 1] = "stdout:\n" .. r.stdout end
    if r.stderr ~= "" then parts[#parts + 1] = "stderr:\n" .. r.stderr end
    return table.concat(parts, "\n")
  end,
}
