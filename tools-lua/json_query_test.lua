test("json_query follows a path", function(t)
  t.eq(t.call("json_query", { document = '{"a": {"b": [10, 20]}}', path = "a.b[1]" }), "20")
end)

test("json_query says when nothing matches", function(t)
  t.match(t.call("json_query", { document = '{"a": 1}', path = "b" }), "^no match")
end)
