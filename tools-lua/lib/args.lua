-- Argument helpers shared by the shipped tools (require("args")).
local args = {}

--- Raises a clean error (no position prefix) naming the tool and the problem.
function args.fail(tool, message)
  error(tool .. ": " .. message, 0)
end

--- The non-empty string argument `name`, or a clean error.
function args.string(tool, value, name)
  if type(value) ~= "string" or value == "" then
    args.fail(tool, "'" .. name .. "' must be a non-empty string")
  end
  return value
end

return args
