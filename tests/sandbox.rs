//! The sandbox (SPEC §9): no escape hatches, one environment per file, confined `require`,
//! `fs` and `env.get`.

mod common;

use common::{Fixture, call, error_of, names};
use serde_json::{Value, json};

/// A tool whose handler runs `body` (Lua statements ending in `return ...`).
fn probe_tool(name: &str, body: &str) -> String {
    format!(
        "registry.register{{ name = '{name}', toolset = 'probe',\n  schema = {{ parameters = {{ type = 'object' }} }},\n  handler = function(args, ctx)\n{body}\nend }}\n"
    )
}

fn run_probe(body: &str) -> Value {
    let fx = Fixture::new();
    fx.tool("probe.lua", &probe_tool("probe", body));
    let host = fx.host();
    call(&host, "probe", json!({}))
}

#[test]
fn dangerous_globals_are_absent() {
    let out = run_probe(
        r#"local seen = {}
for _, name in ipairs({ "io", "debug", "package", "dofile", "loadfile", "require_ok" }) do
  seen[#seen + 1] = name .. "=" .. type(_ENV[name])
end
seen[#seen + 1] = "os.execute=" .. type(os.execute)
seen[#seen + 1] = "os.getenv=" .. type(os.getenv)
seen[#seen + 1] = "os.remove=" .. type(os.remove)
seen[#seen + 1] = "os.time=" .. type(os.time)
seen[#seen + 1] = "string.dump=" .. type(string.dump)
seen[#seen + 1] = "dump_via_meta=" .. type(("").dump)
return table.concat(seen, " ")"#,
    );
    assert_eq!(
        out,
        json!(
            "io=nil debug=nil package=nil dofile=nil loadfile=nil require_ok=nil os.execute=nil os.getenv=nil os.remove=nil os.time=function string.dump=nil dump_via_meta=nil"
        )
    );
}

#[test]
fn load_accepts_text_only_and_defaults_to_the_file_env() {
    let out = run_probe(
        r#"local f, err = load("\27Lua binary")
local ok_text = load("return 1 + 1")()
secret_global = "mine"
local sees = load("return secret_global")()
return tostring(f) .. " | " .. tostring(err):match("binary") .. " | " .. ok_text .. " | " .. sees"#,
    );
    assert_eq!(out, json!("nil | binary | 2 | mine"));
}

#[test]
fn files_cannot_change_what_other_files_see() {
    let fx = Fixture::new();
    // Loads first (sorted): tries every trick to leak into the next file.
    fx.tool(
        "a_tamper.lua",
        &(r#"
shared_global = "leak"
string.upper = function() return "hacked" end
rawset(string, "lower", function() return "hacked" end)
table.concat = nil
json.encode = function() return "hacked" end
_G.print = nil
local mt = getmetatable("")
meta_result = tostring(mt)
pcall(function() getmetatable("").__index.rep = function() return "hacked" end end)
setmetatable(math, { __index = function() return 42 end })
"#
        .to_string()
            + &probe_tool("tamper", "return meta_result")),
    );
    fx.tool(
        "b_victim.lua",
        &probe_tool(
            "victim",
            r#"return table.concat({
  tostring(shared_global), string.upper("a"), string.lower("B"), ("x"):upper(),
  ("ab"):rep(2), json.encode({1}), tostring(math.nonexistent), type(print) }, ",")"#,
        ),
    );
    let host = fx.host();
    assert_eq!(names(&host, None), ["tamper", "victim"]);
    assert_eq!(call(&host, "tamper", json!({})), json!("false"));
    assert_eq!(
        call(&host, "victim", json!({})),
        json!("nil,A,b,X,abab,[1],nil,function")
    );
}

#[test]
fn require_resolves_only_inside_lib_and_the_package_dir() {
    let fx = Fixture::new();
    fx.tool(
        "lib/util.lua",
        "local M = {} function M.twice(x) return x * 2 end return M",
    );
    fx.tool("lib/nested/deep.lua", "return { name = 'deep' }");
    fx.write("outside.lua", "return 'escaped'");
    fx.tool(
        "pkg/tool.lua",
        &("local h = require('helpers')\n".to_string() + &probe_tool("pkg", "return h.hello()")),
    );
    fx.tool(
        "pkg/helpers.lua",
        "return { hello = function() return 'from package' end }",
    );
    fx.tool(
        "user.lua",
        &("local util = require('util')\nlocal deep = require('nested.deep')\n".to_string()
            + &probe_tool(
                "user",
                r#"local results = { tostring(util.twice(21)), deep.name }
for _, bad in ipairs({ "../outside", "/etc/passwd", "helpers", "missing" }) do
  local ok, err = pcall(require, bad)
  results[#results + 1] = tostring(ok)
end
return table.concat(results, ",")"#,
            )),
    );
    let host = fx.host();
    assert_eq!(
        call(&host, "user", json!({})),
        json!("42,deep,false,false,false,false")
    );
    assert_eq!(call(&host, "pkg", json!({})), json!("from package"));
}

#[test]
fn require_through_a_symlink_out_of_lib_is_refused() {
    let fx = Fixture::new();
    fx.write("elsewhere/evil.lua", "return 'escaped'");
    std::fs::create_dir_all(fx.tools().join("lib")).unwrap();
    std::os::unix::fs::symlink(
        fx.root().join("elsewhere/evil.lua"),
        fx.tools().join("lib/evil.lua"),
    )
    .unwrap();
    fx.tool(
        "x.lua",
        &("local e = require('evil')\n".to_string() + &probe_tool("x", "return e")),
    );
    let host = fx.host();
    let error = error_of(&host, "x.lua");
    assert!(error.contains("resolves outside"), "{error}");
}

#[test]
fn env_get_returns_only_declared_or_allowed_names() {
    let fx = Fixture::new();
    // SAFETY of the test: these variables are unique to this test.
    unsafe {
        std::env::set_var("TOOLHOST_TEST_DECLARED", "declared-value");
        std::env::set_var("TOOLHOST_TEST_UNDECLARED", "hidden");
        std::env::set_var("TOOLHOST_TEST_SANDBOX", "everyone");
    }
    fx.tool(
        "env.lua",
        r#"
local at_load = tostring(env.get("TOOLHOST_TEST_DECLARED"))
registry.register{ name = "declares", toolset = "t", requires_env = { "TOOLHOST_TEST_DECLARED" },
  schema = { parameters = { type = "object" } },
  handler = function()
    local inner = coroutine.wrap(function() return env.get("TOOLHOST_TEST_DECLARED") end)()
    return table.concat({ tostring(env.get("TOOLHOST_TEST_DECLARED")), tostring(inner),
      tostring(env.get("TOOLHOST_TEST_UNDECLARED")), tostring(env.get("TOOLHOST_TEST_SANDBOX")),
      at_load }, ",")
  end }
registry.register{ name = "other", toolset = "t",
  schema = { parameters = { type = "object" } },
  handler = function() return tostring(env.get("TOOLHOST_TEST_DECLARED")) end }
"#,
    );
    let host = fx.host_with("[sandbox]\nenv = [\"TOOLHOST_TEST_SANDBOX\"]\n");
    assert_eq!(
        call(&host, "declares", json!({})),
        json!("declared-value,declared-value,nil,everyone,nil")
    );
    assert_eq!(
        call(&host, "other", json!({})),
        json!("nil"),
        "env.get is per tool, not per file"
    );
}

#[test]
fn fs_is_confined_to_its_roots() {
    let fx = Fixture::new();
    fx.write("root/data.txt", "hello\nworld\n");
    fx.write("secret.txt", "top secret");
    std::os::unix::fs::symlink(
        fx.root().join("secret.txt"),
        fx.root().join("root/link.txt"),
    )
    .unwrap();
    fx.tool(
        "fs.lua",
        &probe_tool(
            "fsprobe",
            r#"local out = { fs.read("data.txt"):sub(1, 5) }
for _, bad in ipairs({ "../secret.txt", "link.txt", "/etc/hostname" }) do
  local ok, err = pcall(fs.read, bad)
  out[#out + 1] = tostring(ok) .. ":" .. tostring(tostring(err):match("outside the allowed roots") ~= nil)
end
fs.write("new.txt", "written")
out[#out + 1] = fs.read("new.txt")
local ok = pcall(fs.write, "../escape.txt", "x")
out[#out + 1] = tostring(ok)
return table.concat(out, ",")"#,
        ),
    );
    let root = fx.root().join("root");
    let host = fx.host_with(&format!(
        "[sandbox]\nfs_roots = [{:?}]\n",
        root.display().to_string()
    ));
    assert_eq!(
        call(&host, "fsprobe", json!({})),
        json!("hello,false:true,false:true,false:true,written,false")
    );
    assert!(!fx.root().join("escape.txt").exists());
}

#[test]
fn plugins_get_only_granted_capabilities() {
    let fx = Fixture::new();
    fx.write(
        "plugin/p.lua",
        probe_tool(
            "caps",
            "return table.concat({ type(json), type(log), type(time), type(fs), type(env) }, ',')",
        ),
    );
    let host = fx.host_with("[plugins.p]\ndir = \"plugin\"\n");
    assert_eq!(
        call(&host, "caps", json!({})),
        json!("table,table,table,nil,nil")
    );
    let fx2 = Fixture::new();
    fx2.write(
        "plugin/p.lua",
        probe_tool(
            "caps",
            "return table.concat({ type(json), type(log), type(time), type(fs), type(env) }, ',')",
        ),
    );
    let host = fx2.host_with("[plugins.p]\ndir = \"plugin\"\ncapabilities = [\"fs\"]\n");
    assert_eq!(
        call(&host, "caps", json!({})),
        json!("nil,nil,nil,table,nil")
    );
}

#[test]
fn ctx_is_read_only_and_carries_the_call() {
    let fx = Fixture::new();
    fx.tool(
        "ctx.lua",
        &probe_tool(
            "ctxprobe",
            r#"local ok = pcall(function() ctx.tool_name = "x" end)
return ctx.tool_name .. "," .. tostring(ctx.session_id) .. "," .. tostring(ok)"#,
        ),
    );
    let host = fx.host();
    let session = toolhost::CallContext {
        session_id: Some("s-1".into()),
        ..Default::default()
    };
    assert_eq!(
        common::call_in(&host, "ctxprobe", json!({}), &session),
        json!("ctxprobe,s-1,false")
    );
}
