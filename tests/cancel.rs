//! Cancellation (`CallContext::cancel`): a cancelled call answers `cancelled` at once, and
//! whatever it was running — a Lua handler, a hook, a `proc.run` child — is stopped, so the
//! VM serves the next call.

mod common;

use common::Fixture;
use serde_json::json;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use toolhost::{CallContext, ErrorType, Hook, HookCall, Host, PreDecision, ToolResult};

/// Tells the test when a call has passed the Rust pre_tool_call hooks (the Lua hooks and
/// the handler run right after).
struct Started(parking_lot::Mutex<mpsc::Sender<String>>);

impl Hook for Started {
    fn pre_tool_call(&self, call: &HookCall<'_>) -> PreDecision {
        let _ = self.0.lock().send(call.tool_name.to_string());
        PreDecision::Continue
    }
}

const TOOLS: &str = r#"
registry.register{ name = "spin", toolset = "t", timeout_ms = 600000,
  schema = { parameters = { type = "object" } },
  handler = function() while true do pcall(function() while true do end end) end end }
registry.register{ name = "quick", toolset = "t",
  schema = { parameters = { type = "object" } },
  handler = function() return "quick" end }
registry.register{ name = "child", toolset = "t", timeout_ms = 600000,
  schema = { parameters = { type = "object", properties = { pidfile = { type = "string" } } } },
  handler = function(args)
    return proc.run{ argv = { "sh", "-c", "echo $$ > " .. args.pidfile .. "; exec sleep 600" },
                     timeout_ms = 600000 }.stdout
  end }
"#;

/// A one-VM host over `TOOLS` (plus `extra` files) whose probes and hooks may run for a
/// minute: only cancellation can stop them within the test's liveness bounds.
fn host(fx: &Fixture, extra: &[(&str, &str)]) -> (Host, mpsc::Receiver<String>) {
    fx.tool("tools.lua", TOOLS);
    for (name, text) in extra {
        fx.tool(name, text);
    }
    let config = fx.write(
        "toolhost.toml",
        "[sandbox]\ncommands = [\"sh\"]\n[runtime]\nprobe_timeout_ms = 60000\n",
    );
    let (tx, rx) = mpsc::channel();
    let host = fx
        .builder()
        .config_file(config)
        .vms(1)
        .hook(Started(parking_lot::Mutex::new(tx)))
        .build()
        .expect("host builds");
    (host, rx)
}

/// Starts `name`, waits until it is past the Rust hooks and `ready()` holds, cancels it,
/// and returns its result and how long the answer took after the cancel.
fn cancel_while_running(
    host: &Host,
    started: &mpsc::Receiver<String>,
    name: &str,
    args: serde_json::Value,
    ready: impl Fn() -> bool,
) -> (ToolResult, Duration) {
    let runtime = common::two_worker_runtime();
    let ctx = CallContext::default();
    let token = ctx.cancel.clone();
    let call = {
        let host = host.clone();
        let name = name.to_string();
        runtime.spawn(async move { host.handle_function_call(&name, args, &ctx).await })
    };
    let seen = started
        .recv_timeout(Duration::from_secs(30))
        .expect("the call starts");
    assert_eq!(seen, name);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ready() {
        assert!(Instant::now() < deadline, "{name} never got ready");
        std::thread::yield_now();
    }
    let cancelled_at = Instant::now();
    token.cancel();
    let result = runtime.block_on(call).expect("the call's task ends");
    (result, cancelled_at.elapsed())
}

/// The next call on the (only) VM is answered: nothing of the cancelled call still runs.
fn vm_is_free(host: &Host) {
    let started = Instant::now();
    assert_eq!(common::call(host, "quick", json!({})), json!("quick"));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_cancelled_lua_handler_answers_cancelled_and_frees_its_vm() {
    let fx = Fixture::new();
    let (host, started) = host(&fx, &[]);
    let (result, took) = cancel_while_running(&host, &started, "spin", json!({}), || true);
    assert_eq!(result.error_type(), Some(ErrorType::Cancelled), "{result}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    vm_is_free(&host);
}

#[test]
fn a_cancelled_call_stops_its_spinning_lua_hook() {
    let fx = Fixture::new();
    let hook = "registry.hook('pre_tool_call', function(call)\n  if call.tool_name == 'quick' and not DONE then DONE = true\n    while true do pcall(function() while true do end end) end\n  end\nend)\n";
    let (host, started) = host(&fx, &[("hook.lua", hook)]);
    let (result, _) = cancel_while_running(&host, &started, "quick", json!({}), || true);
    assert_eq!(result.error_type(), Some(ErrorType::Cancelled), "{result}");
    // The hook (allowed a minute) was stopped by the cancel: the VM answers at once.
    vm_is_free(&host);
}

#[cfg(unix)]
#[test]
fn a_cancelled_proc_run_kills_its_child() {
    let fx = Fixture::new();
    let (host, started) = host(&fx, &[]);
    let pidfile = fx.root().join("child.pid");
    let args = json!({ "pidfile": pidfile.display().to_string() });
    let pid = || {
        std::fs::read_to_string(&pidfile)
            .ok()
            .filter(|text| text.ends_with('\n'))
            .map(|text| text.trim().to_string())
    };
    // Cancel once the child runs (it wrote its pid).
    let (result, _) = cancel_while_running(&host, &started, "child", args, || pid().is_some());
    assert_eq!(result.error_type(), Some(ErrorType::Cancelled), "{result}");
    let pid = pid().expect("the child wrote its pid");
    let proc_dir = std::path::Path::new("/proc").join(&pid);
    // A killed child is gone, or a zombie until its parent reaps it.
    let running = || {
        let state = std::fs::read_to_string(proc_dir.join("stat")).unwrap_or_default();
        !state.is_empty() && state.split_whitespace().nth(2) != Some("Z")
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while running() && Instant::now() < deadline {
        std::thread::yield_now();
    }
    assert!(!running(), "child {pid} still runs after the cancel");
    vm_is_free(&host);
}

#[test]
fn an_already_cancelled_call_never_runs() {
    let fx = Fixture::new();
    let (host, started) = host(&fx, &[]);
    let ctx = CallContext::default();
    ctx.cancel.cancel();
    let result =
        common::two_worker_runtime().block_on(host.handle_function_call("quick", json!({}), &ctx));
    assert_eq!(result.error_type(), Some(ErrorType::Cancelled), "{result}");
    assert!(started.try_recv().is_err(), "no stage of the call ran");
}
