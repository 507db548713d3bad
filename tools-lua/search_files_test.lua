test("search_files finds text in files", function(t)
  t.write("src/main.txt", "hello needle world")
  t.contains(t.call("search_files", { pattern = "needle" }), "main.txt")
end)
