//! `[mcp_servers.f4]`: a real FastMCP 4 server (`tests/mcp/fastmcp4_server.py`, the
//! standalone `fastmcp` package pinned in `tests/common/fastmcp.rs`). The plain values it
//! wraps as `{"result": …}` come through `toolhost call` and `toolhost serve` as FastMCP's
//! own client (`fastmcp.Client`, its `.data`) reads them; a server abusing the wrap marker
//! loses no data.

mod common;

use common::Fixture;
use common::fastmcp::{fastmcp_client_reads, python, server_script};
use common::mcp_client::{run_script, step};
use serde_json::{Value, json};

/// A fixture whose `toolhost.toml` consumes the FastMCP 4 server as `f4`.
fn f4() -> Fixture {
    let fx = Fixture::new();
    fx.write(
        "toolhost.toml",
        format!(
            "[mcp_servers.f4]\ncommand = [{:?}, {:?}]\n",
            python().display().to_string(),
            server_script().display().to_string(),
        ),
    );
    fx
}

/// `toolhost call mcp__f4__TOOL ARGS`: whether it succeeded, and what it printed (a string
/// as itself, anything else as JSON).
fn toolhost_call(fx: &Fixture, tool: &str, args: Value) -> (bool, String) {
    let out = fx
        .toolhost()
        .args(["call", &format!("mcp__f4__{tool}"), &args.to_string()])
        .output()
        .expect("toolhost runs");
    let stdout = String::from_utf8_lossy(&out.stdout).trim_end().to_string();
    (out.status.success(), stdout)
}

/// Asserts that `toolhost call` prints what FastMCP's client reads as `.data`: a string as
/// itself, any other value as its JSON.
fn assert_reads_as_fastmcp(tool: &str, args: Value) {
    let expected = fastmcp_client_reads(tool);
    assert_eq!(expected["error"], Value::Null, "{expected}");
    let fx = f4();
    let (ok, printed) = toolhost_call(&fx, tool, args);
    assert!(ok, "{printed}");
    match &expected["data"] {
        Value::String(text) => assert_eq!(&printed, text),
        data => assert_eq!(
            serde_json::from_str::<Value>(&printed).unwrap_or_else(|e| panic!("{e}: {printed}")),
            *data
        ),
    }
}

#[test]
fn a_wrapped_int_comes_through_as_fastmcps_client_reads_it() {
    assert_reads_as_fastmcp("answer", json!({}));
}

#[test]
fn a_wrapped_list_comes_through_as_fastmcps_client_reads_it() {
    assert_reads_as_fastmcp("primes", json!({}));
}

#[test]
fn a_wrapped_string_comes_through_as_fastmcps_client_reads_it() {
    assert_reads_as_fastmcp("greet", json!({"name": "toolhost"}));
}

#[test]
fn an_unwrapped_dict_comes_through_as_fastmcps_client_reads_it() {
    assert_reads_as_fastmcp("point", json!({}));
}

#[test]
fn a_tool_error_carries_the_message_fastmcps_client_reads() {
    let expected = fastmcp_client_reads("fail");
    let message = expected["error"].as_str().expect("FastMCP reads an error");
    let fx = f4();
    let (ok, printed) = toolhost_call(&fx, "fail", json!({}));
    assert!(!ok, "{printed}");
    let out: Value = serde_json::from_str(&printed).unwrap_or_else(|e| panic!("{e}: {printed}"));
    assert_eq!(out["error_type"], "handler_error", "{out}");
    assert!(
        out["error"].as_str().is_some_and(|e| e.ends_with(message)),
        "{out} does not carry {message:?}"
    );
}

/// Through `toolhost serve`, our MCP client gets the plain list as text (its JSON), no
/// structured content and no output schema: the object schema FastMCP wrapped it in no
/// longer describes it.
#[test]
fn a_wrapped_list_reaches_our_mcp_clients_as_fastmcps_client_reads_it() {
    let expected = fastmcp_client_reads("primes");
    let fx = f4();
    let steps = run_script(
        "aggregate.py",
        &[
            assert_cmd::cargo::cargo_bin!("toolhost")
                .to_str()
                .expect("utf-8 path"),
            fx.root().to_str().expect("utf-8 path"),
            "wrapped=mcp__f4__primes",
        ],
    );
    let wrapped = step(&steps, "wrapped");
    assert_eq!(wrapped["error"], false, "{wrapped}");
    let text = wrapped["text"].as_str().expect("text");
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap_or_else(|e| panic!("{e}: {text}")),
        expected["data"]
    );
    assert_eq!(wrapped["structured"], Value::Null, "{wrapped}");
    assert_eq!(wrapped["output_schema"], Value::Null, "{wrapped}");
}

/// The marker promises `{"result": v}`; an object with more keys is not a wrapped plain
/// value, and unwrapping it would drop the rest (FastMCP's client keeps only `result`):
/// toolhost passes the whole object on.
#[test]
fn a_marked_object_with_extra_keys_comes_through_whole() {
    let fx = f4();
    let (ok, printed) = toolhost_call(&fx, "padded", json!({}));
    assert!(ok, "{printed}");
    assert_eq!(
        serde_json::from_str::<Value>(&printed).unwrap_or_else(|e| panic!("{e}: {printed}")),
        json!({"result": 7, "note": "kept"})
    );
}

/// A server (JSON-RPC by hand, `tests/mcp/raw_server.py`) whose output schema carries the
/// wrap marker but whose `structuredContent` is a bare list: reading its text instead would
/// drop the structured value unseen, so the call fails and says why.
#[test]
fn a_marked_result_that_is_no_object_fails_naming_what_it_is() {
    let fx = Fixture::new();
    fx.write("listing", "marked");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/raw_server.py");
    fx.write(
        "toolhost.toml",
        format!(
            "[mcp_servers.raw]\ncommand = [\"python3\", {:?}]\nenv = {{ FIXTURE_DIR = {:?} }}\n",
            script.display().to_string(),
            fx.root().display().to_string(),
        ),
    );
    let out = fx
        .toolhost()
        .args(["call", "mcp__raw__marked_bare"])
        .output()
        .expect("toolhost runs");
    assert!(!out.status.success());
    let printed: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(printed["error_type"], "handler_error", "{printed}");
    let error = printed["error"].as_str().expect("an error message");
    assert!(error.contains("structuredContent is array"), "{error}");
    assert!(error.contains("x-fastmcp-wrap-result"), "{error}");
}
