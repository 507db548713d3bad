//! The sandbox (docs/security.md, docs/lua-api.md): no escape hatches, one environment per file, confined `require`,
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
fn env_get_returns_only_names_the_defining_file_declared_or_config_allows() {
    let fx = Fixture::new();
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
registry.register{ name = "same_file", toolset = "t",
  schema = { parameters = { type = "object" } },
  handler = function() return tostring(env.get("TOOLHOST_TEST_DECLARED")) end }
"#,
    );
    fx.tool(
        "other.lua",
        &probe_tool(
            "other_file",
            r#"return tostring(env.get("TOOLHOST_TEST_DECLARED")) .. "," .. tostring(env.get("TOOLHOST_TEST_SANDBOX"))"#,
        ),
    );
    fx.write(
        "toolhost.toml",
        "[sandbox]\nenv = [\"TOOLHOST_TEST_SANDBOX\"]\n",
    );
    let run = |tool: &str| -> String {
        let output = assert_cmd::Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
            .current_dir(fx.root())
            .env_remove("TOOLHOST_CONFIG")
            // The shipped library would add its tools to every listing the tests read.
            .env("TOOLHOST_NO_LIBRARY", "1")
            .env("TOOLHOST_TEST_DECLARED", "declared-value")
            .env("TOOLHOST_TEST_UNDECLARED", "hidden")
            .env("TOOLHOST_TEST_SANDBOX", "everyone")
            .args(["--cache-dir", "cache", "call", tool])
            .output()
            .expect("toolhost runs");
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    };
    assert_eq!(
        run("declares"),
        "declared-value,declared-value,nil,everyone,nil"
    );
    assert_eq!(run("same_file"), "declared-value", "grants are per file");
    assert_eq!(run("other_file"), "nil,everyone");
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

const CAPS_PROBE: &str = r#"local out = {}
for _, name in ipairs({ "json", "log", "time", "env", "fs", "proc", "store" }) do
  local ok, err = pcall(function() return _ENV[name].anything end)
  out[#out + 1] = name .. "=" .. (ok and "granted" or tostring(err):gsub("^.-: ", ""))
end
return table.concat(out, "\n")"#;

#[test]
fn plugins_get_only_granted_capabilities_and_are_told_how_to_get_more() {
    let fx = Fixture::new();
    fx.write("plugin/p.lua", probe_tool("caps", CAPS_PROBE));
    let host = fx.host_with("[plugins.p]\ndir = \"plugin\"\n");
    let out = call(&host, "caps", json!({}));
    let lines: Vec<&str> = out.as_str().unwrap().lines().collect();
    assert_eq!(lines[..3], ["json=granted", "log=granted", "time=granted"]);
    for (line, module) in lines[3..].iter().zip(["env", "fs", "proc", "store"]) {
        assert_eq!(
            *line,
            format!(
                "{module}=capability '{module}' is not granted to plugin 'p'; add it to [plugins.p] capabilities"
            )
        );
    }
    let fx2 = Fixture::new();
    fx2.write("plugin/p.lua", probe_tool("caps", CAPS_PROBE));
    let host = fx2.host_with("[plugins.p]\ndir = \"plugin\"\ncapabilities = [\"fs\", \"store\"]\n");
    let out = call(&host, "caps", json!({}));
    let granted: Vec<&str> = out
        .as_str()
        .unwrap()
        .lines()
        .filter(|l| l.ends_with("=granted"))
        .collect();
    assert_eq!(granted, ["fs=granted", "store=granted"]);
    // Built-in tools get every module.
    let fx3 = Fixture::new();
    fx3.tool("b.lua", &probe_tool("caps", CAPS_PROBE));
    let out = call(&fx3.host(), "caps", json!({}));
    assert!(
        out.as_str()
            .unwrap()
            .lines()
            .all(|l| l.ends_with("=granted")),
        "{out}"
    );
}

#[test]
fn unknown_capabilities_are_config_errors() {
    let fx = Fixture::new();
    let path = fx.write(
        "toolhost.toml",
        "[plugins.p]\ndir = \"plugin\"\ncapabilities = [\"net\"]\n",
    );
    let error = fx
        .builder()
        .config_file(path)
        .build()
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("plugins.p.capabilities: unknown capability 'net'"),
        "{error}"
    );
}

#[test]
fn proc_runs_only_listed_programs_without_a_shell() {
    let fx = Fixture::new();
    fx.tool(
        "proc.lua",
        &probe_tool(
            "run",
            r#"local out = {}
local r = proc.run{ argv = { "echo", "hello", "$HOME", "; rm -rf /", "`id`" } }
out[#out + 1] = r.code .. ":" .. r.stdout
local c = proc.run{ argv = { "cat" }, stdin = "from stdin" }
out[#out + 1] = c.stdout
local ok, err = pcall(proc.run, { argv = { "sh", "-c", "echo pwned" } })
out[#out + 1] = tostring(ok) .. ":" .. tostring(err)
local ok2, err2 = pcall(proc.run, { argv = { "/bin/echo", "x" } })
out[#out + 1] = tostring(ok2)
local t = proc.run{ argv = { "sleep", "5" }, timeout_ms = 100 }
out[#out + 1] = "timed_out=" .. tostring(t.timed_out)
return table.concat(out, "|")"#,
        ),
    );
    fx.tool(
        "load_time.lua",
        &("local ok, err = pcall(proc.run, { argv = { 'echo' } })\nLOAD_ERR = tostring(err)\n"
            .to_string()
            + &probe_tool("load_time", "return LOAD_ERR")),
    );
    let host = fx.host_with("[sandbox]\ncommands = [\"echo\", \"cat\", \"sleep\"]\n");
    let out = call(&host, "run", json!({}));
    let parts: Vec<&str> = out.as_str().unwrap().split('|').collect();
    assert_eq!(
        parts[0], "0:hello $HOME ; rm -rf / `id`\n",
        "arguments are passed literally"
    );
    assert_eq!(parts[1], "from stdin");
    assert!(
        parts[2].starts_with("false:")
            && parts[2].contains("'sh' is not allowed; list it in [sandbox] commands"),
        "{}",
        parts[2]
    );
    assert!(
        parts[2].contains("proc.lua:"),
        "the error points at the tool: {}",
        parts[2]
    );
    assert_eq!(parts[3], "false", "a path is not the listed bare name");
    assert_eq!(parts[4], "timed_out=true");
    let load = call(&host, "load_time", json!({}));
    assert!(
        load.as_str()
            .unwrap()
            .contains("can only be called from a tool handler"),
        "{load}"
    );
}

#[test]
fn store_is_shared_by_every_vm_and_tool() {
    let fx = Fixture::new();
    fx.tool(
        "store.lua",
        r#"registry.register{ name = "put", toolset = "s", schema = { parameters = { type = "object" } },
  handler = function(args) store.set(args.key, args.value) return "ok" end }
registry.register{ name = "get", toolset = "s", schema = { parameters = { type = "object" } },
  handler = function(args) return json.encode({ value = store.get(args.key) }) end }
registry.register{ name = "drop", toolset = "s", schema = { parameters = { type = "object" } },
  handler = function(args) return tostring(store.delete(args.key)) end }
registry.register{ name = "bad", toolset = "s", schema = { parameters = { type = "object" } },
  handler = function() store.set("f", print) return "no" end }"#,
    );
    let host = fx.builder().vms(2).build().unwrap();
    assert_eq!(host.vm_count(), 2);
    let runtime = common::two_worker_runtime();
    let ctx = toolhost::CallContext::default();
    runtime.block_on(async {
        assert_eq!(
            host.handle_function_call("put", json!({"key": "k", "value": {"n": [1, 2]}}), &ctx)
                .await
                .into_json(),
            json!("ok")
        );
        // Whichever VM serves these, they see the same value.
        for _ in 0..4 {
            let calls = vec![toolhost::FunctionCall::new("get", json!({"key": "k"})); 2];
            for out in host.handle_function_calls(calls, &ctx).await {
                assert_eq!(out.into_json(), json!(r#"{"value":{"n":[1,2]}}"#));
            }
        }
        assert_eq!(
            host.handle_function_call("drop", json!({"key": "k"}), &ctx)
                .await
                .into_json(),
            json!("true")
        );
        assert_eq!(
            host.handle_function_call("get", json!({"key": "k"}), &ctx)
                .await
                .into_json(),
            json!("{}")
        );
        let bad = host
            .handle_function_call("bad", json!({}), &ctx)
            .await
            .into_json();
        assert!(
            bad["error"]
                .as_str()
                .unwrap()
                .contains("store.set: a function is not JSON"),
            "{bad}"
        );
    });
}

#[test]
fn glob_and_grep_search_inside_the_roots() {
    let fx = Fixture::new();
    fx.write("root/src/a.rs", "fn main() {}\n// TODO: one\n");
    fx.write("root/src/deep/b.rs", "// TODO: two\nlet x = 1;\n");
    fx.write("root/notes.md", "TODO: three\n");
    fx.write("root/bin.dat", b"TODO\x00binary".as_slice());
    fx.write("outside/c.rs", "// TODO: never\n");
    fx.tool(
        "search.lua",
        &probe_tool(
            "search",
            r#"local out = { table.concat(fs.glob("**/*.rs"), ","), table.concat(fs.glob("src/*.rs"), ",") }
for _, m in ipairs(fs.grep("TODO: [a-z]+")) do out[#out + 1] = m.path .. ":" .. m.line .. ":" .. m.text end
out[#out + 1] = #fs.grep("TODO", ".", "*.md")
out[#out + 1] = tostring(pcall(fs.glob, "*", ".."))
return table.concat(out, "|")"#,
        ),
    );
    let root = fx.root().join("root");
    let host = fx.host_with(&format!(
        "[sandbox]\nfs_roots = [{:?}]\n",
        root.display().to_string()
    ));
    let out = call(&host, "search", json!({}));
    assert_eq!(
        out,
        json!(
            "src/a.rs,src/deep/b.rs|src/a.rs|notes.md:1:TODO: three|src/a.rs:2:// TODO: one|src/deep/b.rs:1:// TODO: two|1|false"
        )
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
    let session = toolhost::CallContext::default().with_session_id("s-1");
    assert_eq!(
        common::call_in(&host, "ctxprobe", json!({}), &session),
        json!("ctxprobe,s-1,false")
    );
}
