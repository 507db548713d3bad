-- calc: evaluate an arithmetic expression (+ - * / % ^ or **, parentheses, unary minus, and
-- functions sqrt abs floor ceil min max round, constants pi e). A small recursive-descent
-- parser: no `load`, nothing but arithmetic is ever evaluated.
local functions = {
  sqrt = math.sqrt, abs = math.abs, floor = math.floor, ceil = math.ceil,
  min = math.min, max = math.max,
  round = function(x) return math.floor(x + 0.5) end,
}
local constants = { pi = math.pi, e = math.exp(1) }

local function tokenize(text)
  local tokens, i = {}, 1
  while i <= #text do
    local c = text:sub(i, i)
    if c:match("%s") then
      i = i + 1
    elseif c:match("[%d%.]") then
      local number = text:match("^%d*%.?%d+[eE][%+%-]?%d+", i) or text:match("^%d*%.?%d*", i)
      if tonumber(number) == nil then error("calc: bad number '" .. number .. "'", 0) end
      tokens[#tokens + 1] = { kind = "number", value = tonumber(number) }
      i = i + #number
    elseif c:match("%a") then
      local name = text:match("^%a%w*", i)
      tokens[#tokens + 1] = { kind = "name", value = name }
      i = i + #name
    elseif c == "*" and text:sub(i + 1, i + 1) == "*" then
      -- `**` (Python's power) means `^`.
      tokens[#tokens + 1] = { kind = "^" }
      i = i + 2
    elseif c:match("[%+%-%*/%%%^%(%),]") then
      tokens[#tokens + 1] = { kind = c }
      i = i + 1
    else
      error("calc: unexpected character '" .. c .. "' at position " .. i, 0)
    end
  end
  return tokens
end

local function parser(tokens)
  local pos = 1
  local function peek() return tokens[pos] and tokens[pos].kind end
  local function take(kind)
    if peek() ~= kind then
      error("calc: expected " .. kind .. (tokens[pos] and (" near token " .. pos) or " at the end"), 0)
    end
    pos = pos + 1
    return tokens[pos - 1]
  end
  local expression
  local function primary()
    local kind = peek()
    if kind == "number" then return take("number").value end
    if kind == "(" then
      take("(")
      local value = expression()
      take(")")
      return value
    end
    if kind == "-" then take("-") return -primary() end
    if kind == "+" then take("+") return primary() end
    if kind == "name" then
      local name = take("name").value
      if constants[name] then return constants[name] end
      local fn = functions[name]
      if not fn then error("calc: unknown name '" .. name .. "'", 0) end
      take("(")
      local arguments = { expression() }
      while peek() == "," do take(",") arguments[#arguments + 1] = expression() end
      take(")")
      return fn(table.unpack(arguments))
    end
    error("calc: unexpected " .. (kind or "end of expression"), 0)
  end
  local function power()
    local base = primary()
    if peek() == "^" then take("^") return base ^ power() end
    return base
  end
  local function term()
    local value = power()
    while peek() == "*" or peek() == "/" or peek() == "%" do
      local op = take(peek()).kind
      local rhs = power()
      if op == "*" then value = value * rhs
      elseif op == "/" then
        if rhs == 0 then error("calc: division by zero", 0) end
        value = value / rhs
      else value = value % rhs end
    end
    return value
  end
  function expression()
    local value = term()
    while peek() == "+" or peek() == "-" do
      local op = take(peek()).kind
      local rhs = term()
      value = op == "+" and value + rhs or value - rhs
    end
    return value
  end
  return function()
    local value = expression()
    if pos <= #tokens then error("calc: unexpected input after position " .. pos, 0) end
    return value
  end
end

registry.register{
  name = "calc",
  toolset = "data",
  annotations = { title = "Calculator", read_only = true, open_world = false },
  emoji = "🔢",
  parallel_safe = true,
  schema = {
    description = "Evaluate an arithmetic expression, e.g. (2 + 3) * 4 ^ 2 / sqrt(16)",
    parameters = {
      type = "object",
      properties = { expression = { type = "string" } },
      required = { "expression" },
    },
  },
  handler = function(a)
    local value = parser(tokenize(a.expression))()
    if value ~= value or value == math.huge or value == -math.huge then
      error("calc: the result is not a finite number", 0)
    end
    if math.type(value) == "float" and value == math.floor(value) and math.abs(value) < 2^53 then
      return string.format("%d", value)
    end
    return tostring(value)
  end,
}
