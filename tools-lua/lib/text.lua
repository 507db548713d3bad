-- Shared text helpers for the shipped tools (required as `require("text")`).
local text = {}

--- Splits `s` into lines (without their newline characters).
function text.lines(s)
  local out = {}
  for line in (s .. "\n"):gmatch("(.-)\r?\n") do
    out[#out + 1] = line
  end
  if s:sub(-1) == "\n" then out[#out] = nil end
  return out
end

--- Formats lines `first..last` of `lines` as `N|text`, right-aligning the numbers.
function text.numbered(lines, first, last)
  local width = #tostring(last)
  local out = {}
  for i = first, last do
    out[#out + 1] = string.format("%" .. width .. "d|%s", i, lines[i])
  end
  return table.concat(out, "\n")
end

return text
