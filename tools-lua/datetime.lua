-- datetime: now, parse, format, add, diff — all in UTC.
local clock = require("clock")

local function when(a)
  if a.value == nil or a.value == "" or a.value == "now" then return time.now() // 1000 end
  if type(a.value) == "number" then return math.floor(a.value) end
  local epoch, err = clock.parse(a.value)
  if not epoch then error("datetime: " .. err, 0) end
  return epoch
end

local units = { seconds = 1, minutes = 60, hours = 3600, days = 86400, weeks = 604800 }

registry.register{
  name = "datetime",
  toolset = "data",
  annotations = { title = "Date and time", read_only = true, open_world = false },
  emoji = "🕒",
  parallel_safe = true,
  schema = {
    description = "Dates and times in UTC: now, parse, format (strftime), add an amount, diff two times",
    parameters = {
      type = "object",
      properties = {
        op = { type = "string", enum = { "now", "parse", "format", "add", "diff" } },
        value = { type = { "string", "number" }, description = "ISO 8601 text or epoch seconds (default: now)" },
        other = { type = { "string", "number" }, description = "The second time, for diff" },
        format = { type = "string", description = "strftime pattern, for format (e.g. %A %d %B %Y)" },
        amount = { type = "number", description = "How much to add (negative to subtract)" },
        unit = { type = "string", enum = { "seconds", "minutes", "hours", "days", "weeks" } },
      },
      required = { "op" },
    },
  },
  handler = function(a)
    if a.op == "now" or a.op == "parse" then
      local t = when(a)
      return { iso = clock.iso(t), epoch = t, weekday = os.date("!%A", t) }
    elseif a.op == "format" then
      if type(a.format) ~= "string" then error("datetime: format needs 'format'", 0) end
      local ok, text = pcall(os.date, "!" .. a.format, when(a))
      if not ok then error("datetime: bad format: " .. tostring(text), 0) end
      return text
    elseif a.op == "add" then
      local unit = units[a.unit or "seconds"]
      if type(a.amount) ~= "number" or not unit then
        error("datetime: add needs a numeric 'amount' and a 'unit'", 0)
      end
      local t = when(a) + math.floor(a.amount * unit)
      return { iso = clock.iso(t), epoch = t }
    elseif a.op == "diff" then
      local t1 = when(a)
      local t2 = when({ value = a.other })
      local seconds = t2 - t1
      return { seconds = seconds, minutes = seconds / 60, hours = seconds / 3600, days = seconds / 86400 }
    end
    error("datetime: unknown op '" .. tostring(a.op) .. "'", 0)
  end,
}
