//! Hostile review of "a warm start is observably identical to a cold one" (issue 32 item 1):
//! tool directories written the way a hostile (or merely unlucky) tool author would, each
//! run with the real binary on a cold start (no registration cache) and on the warm start
//! that follows, comparing what a user sees.
//!
//! Found by a review and fixed since:
//! - a call whose callee is not what its name says (a global of the file's own named like a
//!   whitelisted library function, a replaced `registry`, `_ENV`, the iterator a generic
//!   `for` calls): a file binding a trusted name or naming `_ENV` is not analysed further,
//!   and a `for` may only iterate `pairs`, `ipairs` or `string.gmatch`;
//! - values that differ between two Lua states (table addresses, `pairs` order) baked into
//!   a registration: `tostring` and `string.format` are no longer trusted, and nothing
//!   declared outside a `pairs` loop may change inside it;
//! - inputs of a load that the cache key did not cover (`[runtime] memory_mb` and
//!   `probe_timeout_ms`, a module behind a symlink, a module edited without changing its
//!   size and modification time): the key covers the limits and the modules' contents.
//!
//! Still open (ignored, docs/discovery.md): the circumstances of the run at first use (a VM
//! whose memory handlers have filled; a run inside another tool's `ctx.call`, on that call's
//! deadline). Run them with `cargo test --test warm_equals_cold_hostile -- --ignored`.

mod common;

use common::Fixture;
use std::process::Output;

/// A module other files may write into.
const SHARED: &str = "return {}\n";

/// Reports what the shared module's `greeting` is when it is called.
const READER: &str = r#"local shared = require("shared")
registry.register{ name = "b", toolset = "t",
  schema = { parameters = { type = "object", properties = {} } },
  handler = function() return tostring(shared.greeting) end }
"#;

/// The registration every hostile `a.lua` ends with.
const REGISTER_A: &str = r#"
registry.register{ name = "a", toolset = "t",
  schema = { parameters = { type = "object", properties = {} } },
  handler = function() return "a" end }
"#;

fn run(fx: &Fixture, args: &[&str]) -> Output {
    fx.toolhost().args(args).output().expect("toolhost runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// `toolhost call b` on a cold start, then on the warm start after it: what b saw.
fn b_cold_then_warm(hostile_a: &str) -> (String, String) {
    let fx = Fixture::new();
    fx.tool("lib/shared.lua", SHARED);
    fx.tool("a.lua", &format!("{hostile_a}{REGISTER_A}"));
    fx.tool("b.lua", READER);
    let cold = stdout(&run(&fx, &["call", "b"]));
    let warm = stdout(&run(&fx, &["call", "b"]));
    (cold, warm)
}

/// The cold start sees `a`'s top-level write; the warm start must see it too.
fn assert_b_sees_a_on_both_starts(hostile_a: &str) {
    let (cold, warm) = b_cold_then_warm(hostile_a);
    assert_eq!(
        cold, "hello from a",
        "the cold start runs a.lua's top level"
    );
    assert_eq!(warm, cold, "warm start differs for:\n{hostile_a}");
}

// ---------------------------------------------------------------------------------------
// Class 1: the callee is not what its name says.

#[test]
fn a_global_function_named_like_a_pure_library_function_runs_on_every_start() {
    assert_b_sees_a_on_both_starts(
        r#"function tostring(x) require("shared").greeting = "hello from a" return "" end
local _ = tostring(1)
"#,
    );
}

#[test]
fn a_replaced_library_table_runs_on_every_start() {
    assert_b_sees_a_on_both_starts(
        r#"string = { format = function() require("shared").greeting = "hello from a" return "" end }
local s = string.format("%d", 1)
"#,
    );
}

#[test]
fn a_replaced_require_runs_on_every_start() {
    assert_b_sees_a_on_both_starts(
        r#"local real_require = require
function require(name) real_require("shared").greeting = "hello from a" return {} end
local m = require("shared")
"#,
    );
}

#[test]
fn a_local_env_runs_on_every_start() {
    assert_b_sees_a_on_both_starts(
        r#"local _ENV = { registry = registry, require = require,
  pairs = function() require("shared").greeting = "hello from a" return next, {} end }
for _ in pairs({}) do end
"#,
    );
}

#[test]
fn a_for_variable_named_env_runs_on_every_start() {
    assert_b_sees_a_on_both_starts(
        r#"for _, _ENV in ipairs({ { tostring = function()
  require("shared").greeting = "hello from a" end } }) do tostring(1) end
"#,
    );
}

#[test]
fn a_for_loop_over_a_function_literal_runs_on_every_start() {
    assert_b_sees_a_on_both_starts(
        r#"for _ in function() require("shared").greeting = "hello from a" end do end
"#,
    );
}

#[test]
fn a_for_loop_over_a_local_function_runs_on_every_start() {
    assert_b_sees_a_on_both_starts(
        r#"local function step() require("shared").greeting = "hello from a" end
for _ in step do end
"#,
    );
}

#[test]
fn a_wrapped_registry_runs_on_every_start() {
    assert_b_sees_a_on_both_starts(
        r#"local real = registry
registry = { register = function(t)
  require("shared").greeting = "hello from a"
  real.register(t)
end }
"#,
    );
}

/// Variants of class 1 the fix must cover too (each writes `shared.greeting` at load).
const REBINDINGS: &[&str] = &[
    "function next() W() end\nlocal _ = next({})",
    "function assert() W() end\nassert(true)",
    "select = function() W() end\nlocal _ = select(1, 2)",
    "math = { floor = function() W() return 1 end }\nlocal _ = math.floor(1.5)",
    "json = { encode = function() W() return '' end }\nlocal _ = json.encode({})",
    "local t = {}\ntable = { insert = function() W() end }\ntable.insert(t, 1)",
    "_ENV = { registry = registry, require = require, W = W, type = function() W() end }\ntype(1)",
    "do local _ENV = { W = W, pairs = function() W() return next, {} end } for _ in pairs({}) do end end",
    "local t = {}\nfor _ in next, t, nil do end\nfor _ in W do end",
];

#[test]
fn every_rebinding_of_a_trusted_name_runs_on_every_start() {
    let prelude = "local function W() require(\"shared\").greeting = \"hello from a\" end\n";
    let failing: Vec<(&str, String, String)> = REBINDINGS
        .iter()
        .map(|variant| {
            let (cold, warm) = b_cold_then_warm(&format!("{prelude}{variant}\n"));
            (*variant, cold, warm)
        })
        .filter(|(_, cold, warm)| cold != "hello from a" || warm != cold)
        .collect();
    assert!(
        failing.is_empty(),
        "warm differs from cold for: {failing:#?}"
    );
}

#[test]
fn a_print_at_load_is_logged_on_every_start() {
    let fx = Fixture::new();
    fx.tool(
        "a.lua",
        &format!("for _ in function() print(\"a.lua loaded\") end do end\n{REGISTER_A}"),
    );
    fx.tool("b.lua", &common::simple_tool("b", "t", "b"));
    let cold = stderr(&run(&fx, &["call", "b"]));
    let warm = stderr(&run(&fx, &["call", "b"]));
    assert!(cold.contains("a.lua loaded"), "{cold}");
    assert!(
        warm.contains("a.lua loaded"),
        "the warm start lost the line:\n{warm}"
    );
}

// ---------------------------------------------------------------------------------------
// Class 2: values that differ between two Lua states, baked into a registration.

/// `toolhost call a` on a cold start, then on the warm start after it.
fn a_cold_then_warm(a: &str) -> (String, String, String) {
    let fx = Fixture::new();
    fx.tool("a.lua", a);
    let cold = stdout(&run(&fx, &["call", "a"]));
    let warm_run = run(&fx, &["-v", "call", "a"]);
    (cold, stdout(&warm_run), stderr(&warm_run))
}

fn assert_a_answers_on_both_starts(a: &str) {
    // Whether the file is skipped or runs on every start, the warm answer is the cold one.
    let (cold, warm, _log) = a_cold_then_warm(a);
    assert_eq!(cold, "a");
    assert_eq!(warm, cold, "warm start differs for:\n{a}");
}

#[test]
fn a_table_address_in_a_description_does_not_break_the_warm_start() {
    assert_a_answers_on_both_starts(
        r#"registry.register{ name = "a", toolset = "t", description = "made by " .. tostring({}),
  schema = { parameters = { type = "object", properties = {} } },
  handler = function() return "a" end }
"#,
    );
}

#[test]
fn a_formatted_address_in_a_description_does_not_break_the_warm_start() {
    assert_a_answers_on_both_starts(
        r#"registry.register{ name = "a", toolset = "t", description = string.format("id %p", {}),
  schema = { parameters = { type = "object", properties = {} } },
  handler = function() return "a" end }
"#,
    );
}

#[test]
fn pairs_order_in_a_schema_does_not_break_the_warm_start() {
    assert_a_answers_on_both_starts(
        r#"local kinds = {}
for k in pairs({ alpha = 1, beta = 2, gamma = 3, delta = 4, epsilon = 5, zeta = 6, eta = 7,
  theta = 8, iota = 9, kappa = 10 }) do table.insert(kinds, k) end
registry.register{ name = "a", toolset = "t",
  schema = { parameters = { type = "object",
    properties = { kind = { type = "string", enum = kinds } } } },
  handler = function() return "a" end }
"#,
    );
}

// ---------------------------------------------------------------------------------------
// Class 3: inputs of a load the cache key does not cover.

#[test]
fn a_smaller_memory_limit_gives_the_same_tools_on_a_warm_start() {
    let fx = Fixture::new();
    fx.tool(
        "a.lua",
        &format!("local big = string.rep(\"x\", 64 * 1024 * 1024)\n{REGISTER_A}"),
    );
    fx.tool("b.lua", &common::simple_tool("b", "t", "b"));
    fx.write("toolhost.toml", "[runtime]\nmemory_mb = 256\n");
    run(&fx, &["list"]);
    fx.write("toolhost.toml", "[runtime]\nmemory_mb = 32\n");
    let warm = stdout(&run(&fx, &["call", "a"]));
    std::fs::remove_dir_all(fx.cache()).expect("cache removed");
    let cold = stdout(&run(&fx, &["call", "a"]));
    assert_ne!(cold, "a", "a.lua does not load within 32 MB");
    assert_eq!(warm, cold);
}

#[test]
fn a_shorter_load_deadline_gives_the_same_tools_on_a_warm_start() {
    let fx = Fixture::new();
    // About 0.2 s of work: far over 20 ms, far under 60 s on any machine.
    fx.tool(
        "a.lua",
        &format!("local n = 0\nfor i = 1, 20000000 do n = n + i end\n{REGISTER_A}"),
    );
    fx.write("toolhost.toml", "[runtime]\nprobe_timeout_ms = 60000\n");
    assert_eq!(stdout(&run(&fx, &["call", "a"])), "a");
    fx.write("toolhost.toml", "[runtime]\nprobe_timeout_ms = 20\n");
    let warm = stdout(&run(&fx, &["call", "a"]));
    std::fs::remove_dir_all(fx.cache()).expect("cache removed");
    let cold = stdout(&run(&fx, &["call", "a"]));
    assert_ne!(cold, "a", "a.lua does not load within 20 ms");
    assert_eq!(warm, cold);
}

#[test]
fn a_module_behind_a_symlink_is_fingerprinted_by_its_target() {
    let fx = Fixture::new();
    fx.tool("lib/other.lua", SHARED);
    fx.tool("lib/data/shared.txt", SHARED);
    std::os::unix::fs::symlink("data/shared.txt", fx.tools().join("lib/shared.lua"))
        .expect("symlink");
    fx.tool(
        "a.lua",
        &format!("local s = require(\"shared\")\n{REGISTER_A}"),
    );
    fx.tool(
        "b.lua",
        &READER.replace("require(\"shared\")", "require(\"other\")"),
    );
    assert_eq!(stdout(&run(&fx, &["call", "b"])), "nil");
    fx.tool(
        "lib/data/shared.txt",
        "require(\"other\").greeting = \"hello from a\"\nreturn {}\n",
    );
    let warm = stdout(&run(&fx, &["call", "b"]));
    std::fs::remove_dir_all(fx.cache()).expect("cache removed");
    let cold = stdout(&run(&fx, &["call", "b"]));
    assert_eq!(cold, "hello from a");
    assert_eq!(warm, cold);
}

#[test]
fn a_module_edited_in_place_is_noticed_on_a_warm_start() {
    let fx = Fixture::new();
    fx.tool("lib/other.lua", SHARED);
    let edited = "require(\"other\").greeting = \"hello from a\"\nreturn {}\n";
    let before = format!(
        "{}\nreturn {{}}\n",
        "-".repeat(edited.len() - "\nreturn {}\n".len())
    );
    assert_eq!(before.len(), edited.len());
    let module = fx.tool("lib/shared.lua", &before);
    let mtime = std::fs::metadata(&module)
        .and_then(|m| m.modified())
        .expect("mtime");
    fx.tool(
        "a.lua",
        &format!("local s = require(\"shared\")\n{REGISTER_A}"),
    );
    fx.tool(
        "b.lua",
        &READER.replace("require(\"shared\")", "require(\"other\")"),
    );
    assert_eq!(stdout(&run(&fx, &["call", "b"])), "nil");
    fx.tool("lib/shared.lua", edited);
    std::fs::File::options()
        .write(true)
        .open(&module)
        .and_then(|f| f.set_modified(mtime))
        .expect("mtime kept");
    let warm = stdout(&run(&fx, &["call", "b"]));
    std::fs::remove_dir_all(fx.cache()).expect("cache removed");
    let cold = stdout(&run(&fx, &["call", "b"]));
    assert_eq!(cold, "hello from a");
    assert_eq!(warm, cold);
}

// ---------------------------------------------------------------------------------------
// Passing cases worth keeping: the analysis refuses these, or they are harmless.

#[test]
fn a_local_function_named_like_a_pure_library_function_runs_on_every_start() {
    assert_b_sees_a_on_both_starts(
        r#"local function tostring(x) require("shared").greeting = "hello from a" return "" end
local _ = tostring(1)
"#,
    );
}

#[test]
fn a_library_field_replaced_in_place_runs_on_every_start() {
    assert_b_sees_a_on_both_starts(
        r#"string.format = function() require("shared").greeting = "hello from a" return "" end
local s = string.format("%d", 1)
"#,
    );
}

#[test]
fn an_immediately_called_function_literal_runs_on_every_start() {
    assert_b_sees_a_on_both_starts(
        r#"local _ = (function() require("shared").greeting = "hello from a" end)()
"#,
    );
}

#[test]
fn a_fresh_table_method_runs_on_every_start() {
    assert_b_sees_a_on_both_starts(
        r#"local M = { f = function() require("shared").greeting = "hello from a" end }
M.f()
"#,
    );
}

#[test]
fn an_effect_in_a_registration_field_runs_on_every_start() {
    assert_b_sees_a_on_both_starts(
        r#"local s = require("shared")
registry.register{ name = "a0", toolset = "t", description = (function() s.greeting = "hello from a" return "d" end)(),
  schema = { parameters = { type = "object", properties = {} } },
  handler = function() return "a0" end }
"#,
    );
}

#[test]
fn the_shipped_tools_are_all_skipped_on_a_warm_start() {
    let fx = Fixture::new();
    let shipped = concat!(env!("CARGO_MANIFEST_DIR"), "/tools-lua");
    let list = |fx: &Fixture| run(fx, &["-v", "--tools-dir", shipped, "list"]);
    let cold = list(&fx);
    let warm = list(&fx);
    assert_eq!(stdout(&cold), stdout(&warm));
    let log = stderr(&warm);
    assert!(!log.contains("runs at every start"), "{log}");
    assert!(log.contains("registrations taken from the cache"), "{log}");
}

/// Each tool's answer, calling `order` in turn on one host (one VM) built from `fx`.
fn answers(fx: &Fixture, order: &[&str]) -> Vec<String> {
    let host = fx.host_with("[runtime]\nvms = 1\nmemory_mb = 64\n");
    order
        .iter()
        .map(|name| {
            let result = common::call(&host, name, serde_json::json!({}));
            result
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| result.to_string())
        })
        .collect()
}

#[test]
#[ignore = "known limit (docs/discovery.md): a file run at first use allocates in a VM other handlers may have filled; not yet accounted for"]
fn a_file_run_at_first_use_has_the_memory_it_had_at_start_up() {
    let fx = Fixture::new();
    fx.tool(
        "a.lua",
        &format!("local big = #string.rep(\"x\", 24 * 1024 * 1024)\n{REGISTER_A}"),
    );
    fx.tool(
        "b.lua",
        r#"local kept = {}
registry.register{ name = "b", toolset = "t",
  schema = { parameters = { type = "object", properties = {} } },
  handler = function() kept[#kept + 1] = string.rep("y", 30 * 1024 * 1024) return "b" end }
"#,
    );
    let cold = answers(&fx, &["b", "a"]);
    let warm = answers(&fx, &["b", "a"]);
    assert_eq!(cold, vec!["b", "a"]);
    assert_eq!(warm, cold);
}

#[test]
#[ignore = "known limit (docs/discovery.md): a file first used through ctx.call runs inside the caller's deadline; not yet paused"]
fn a_file_first_used_through_ctx_call_does_not_spend_the_callers_deadline() {
    let fx = Fixture::new();
    fx.write("toolhost.toml", "[runtime]\nprobe_timeout_ms = 60000\n");
    // About a second of work at load: far over b's 500 ms when it lands inside b's call.
    fx.tool(
        "a.lua",
        &format!("local n = 0\nfor i = 1, 150000000 do n = n + i end\n{REGISTER_A}"),
    );
    fx.tool(
        "b.lua",
        r#"registry.register{ name = "b", toolset = "t", timeout_ms = 500,
  schema = { parameters = { type = "object", properties = {} } },
  handler = function(args, ctx) return ctx.call("a", {}) end }
"#,
    );
    let cold = stdout(&run(&fx, &["call", "b"]));
    let warm = stdout(&run(&fx, &["call", "b"]));
    assert_eq!(cold, "a");
    assert_eq!(warm, cold);
}
