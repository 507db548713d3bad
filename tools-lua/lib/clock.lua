-- UTC date arithmetic without the local time zone (os.time with a table is local time).
local clock = {}

-- Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
local function days_from_civil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = (y >= 0 and y or y - 399) // 400
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = (153 * mp + 2) // 5 + d - 1
  local doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
  return era * 146097 + doe - 719468
end

--- Seconds since the epoch of an ISO 8601 UTC text (YYYY-MM-DD, optional THH:MM[:SS], optional Z or ±HH:MM).
function clock.parse(text)
  local y, mo, d, rest = text:match("^(%d%d%d%d)%-(%d%d)%-(%d%d)(.*)$")
  if not y then return nil, "expected YYYY-MM-DD[THH:MM[:SS]][Z|±HH:MM], got '" .. text .. "'" end
  local h, mi, s, zone = 0, 0, 0, rest
  local time_part = rest:match("^[T ](.*)$")
  if time_part then
    local hh, mm, tail = time_part:match("^(%d%d):(%d%d)(.*)$")
    if not hh then return nil, "bad time in '" .. text .. "'" end
    h, mi, zone = tonumber(hh), tonumber(mm), tail
    local ss, tail2 = zone:match("^:(%d%d)(.*)$")
    if ss then s, zone = tonumber(ss), tail2 end
    zone = zone:gsub("^%.%d+", "")
  end
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  if mo < 1 or mo > 12 or d < 1 or d > 31 or h > 23 or mi > 59 or s > 60 then
    return nil, "out-of-range field in '" .. text .. "'"
  end
  local offset = 0
  if zone ~= "" and zone ~= "Z" then
    local sign, oh, om = zone:match("^([%+%-])(%d%d):?(%d%d)$")
    if not sign then return nil, "bad time zone '" .. zone .. "'" end
    offset = (tonumber(oh) * 3600 + tonumber(om) * 60) * (sign == "+" and 1 or -1)
  end
  return days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offset
end

--- ISO 8601 UTC text of an epoch time.
function clock.iso(epoch)
  return os.date("!%Y-%m-%dT%H:%M:%SZ", epoch)
end

return clock
