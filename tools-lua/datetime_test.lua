test("datetime parses an ISO time", function(t)
  local out = t.call("datetime", { op = "parse", value = "2024-02-29T10:30:00Z" })
  t.eq(out, { iso = "2024-02-29T10:30:00Z", epoch = 1709202600, weekday = "Thursday" })
end)

test("datetime adds days", function(t)
  local out = t.call("datetime", { op = "add", value = "2024-02-28T00:00:00Z", amount = 1, unit = "days" })
  t.eq(out.iso, "2024-02-29T00:00:00Z")
end)
