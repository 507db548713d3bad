-- json_query: pick values out of a JSON document with a path like users[0].name or
-- items[*].id.
local function parse_path(path)
  local steps = {}
  local i = 1
  while i <= #path do
    local c = path:sub(i, i)
    if c == "." then
      i = i + 1
    elseif c == "[" then
      local close = path:find("]", i, true)
      if not close then error("json_query: unclosed [ in path at position " .. i, 0) end
      local inner = path:sub(i + 1, close - 1)
      if inner == "*" then
        steps[#steps + 1] = { all = true }
      elseif inner:match("^%-?%d+$") then
        steps[#steps + 1] = { index = tonumber(inner) }
      else
        steps[#steps + 1] = { key = inner:gsub("^[\"']", ""):gsub("[\"']$", "") }
      end
      i = close + 1
    else
      local key = path:match("^[^%.%[]+", i)
      steps[#steps + 1] = { key = key }
      i = i + #key
    end
  end
  return steps
end

local function apply(values, step)
  local out = json.array()
  for _, value in ipairs(values) do
    if type(value) == "table" then
      if step.all then
        for _, item in ipairs(value) do out[#out + 1] = item end
        if #value == 0 then for _, item in pairs(value) do out[#out + 1] = item end end
      elseif step.index then
        local index = step.index
        if index < 0 then index = #value + index end
        local item = value[index + 1]
        if item ~= nil then out[#out + 1] = item end
      elseif value[step.key] ~= nil then
        out[#out + 1] = value[step.key]
      end
    end
  end
  return out
end

registry.register{
  name = "json_query",
  toolset = "data",
  annotations = { title = "Query JSON", read_only = true, open_world = false },
  emoji = "🧮",
  parallel_safe = true,
  schema = {
    description = "Query a JSON document with a path: a.b[0].c, items[*].id, [-1] for the last item",
    parameters = {
      type = "object",
      properties = {
        document = { type = "string", description = "The JSON text" },
        path = { type = "string", description = "The path; empty or . for the whole document" },
      },
      required = { "document", "path" },
    },
  },
  handler = function(a)
    local ok, doc = pcall(json.decode, a.document)
    if not ok then error("json_query: document is not valid JSON: " .. tostring(doc), 0) end
    local values = json.array({ doc })
    local wildcard = false
    for _, step in ipairs(parse_path(a.path or "")) do
      wildcard = wildcard or step.all == true
      values = apply(values, step)
    end
    if #values == 0 then return "no match for path " .. a.path end
    if wildcard or #values > 1 then return json.encode(values) end
    local only = values[1]
    if type(only) == "table" then return json.encode(only) end
    return json.encode(only)
  end,
}
