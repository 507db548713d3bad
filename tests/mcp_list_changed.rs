//! `notifications/tools/list_changed` is sent only when what a session lists changed: not
//! for a reload that changed nothing, nor for one that only reported an error.

mod common;

use common::{Fixture, simple_tool};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[test]
fn list_changed_is_sent_only_when_the_listed_tools_change() {
    let fx = Fixture::new();
    fx.tool("a.lua", &simple_tool("a", "t", "x"));
    let host = fx.host();
    let runtime = common::two_worker_runtime();
    runtime.block_on(async {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (server_in, server_out) = tokio::io::split(server);
        let serving = {
            let host = host.clone();
            tokio::spawn(async move {
                host.serve_mcp(toolhost::Selection::default(), BufReader::new(server_in), server_out)
                    .await
            })
        };
        let (client_in, mut client_out) = tokio::io::split(client);
        let mut lines = BufReader::new(client_in).lines();
        let mut send = async |line: &str| {
            client_out.write_all(line.as_bytes()).await.unwrap();
            client_out.write_all(b"\n").await.unwrap();
        };
        send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#).await;
        lines.next_line().await.unwrap().expect("initialize answered");
        send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
        // The session's notifier takes its first look at the tools before it listens.
        send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#).await;
        lines.next_line().await.unwrap().expect("tools/list answered");

        let reload = |host: &toolhost::Host| {
            let host = host.clone();
            tokio::task::spawn_blocking(move || host.reload())
        };
        // 1. Nothing changed.
        reload(&host).await.unwrap();
        // 2. Only an error (a broken new file).
        fx.tool("broken.lua", "registry.register{ name = ");
        let event = reload(&host).await.unwrap();
        assert!(!event.errors.is_empty(), "{event:?}");
        // 3. A real change.
        fx.tool("b.lua", &simple_tool("b", "t", "y"));
        reload(&host).await.unwrap();

        // Wait for the first notification. Had reloads 1 or 2 sent one (right after them,
        // milliseconds before reload 3), reload 3's would follow and show up below, before
        // the ping's answer.
        loop {
            let line = lines.next_line().await.unwrap().expect("a line");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["method"] == "notifications/tools/list_changed" {
                break;
            }
        }
        send(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#).await;
        loop {
            let line = lines.next_line().await.unwrap().expect("a line");
            let message: Value = serde_json::from_str(&line).unwrap();
            assert_ne!(
                message["method"], "notifications/tools/list_changed",
                "a second notification"
            );
            if message["id"] == 3 {
                break;
            }
        }
        serving.abort();
    });
}

#[test]
fn list_changed_does_not_wait_for_a_running_check_fn() {
    let fx = Fixture::new();
    let release = fx.root().join("release");
    // A probe that runs until the test lets it go (or its 60 s deadline passes).
    fx.tool(
        "slow.lua",
        &format!(
            r#"registry.register{{ name = "slow", toolset = "t",
  schema = {{ parameters = {{ type = "object", properties = {{}} }} }},
  check_fn = function()
    while not pcall(fs.read, {release:?}) do end
    return true
  end,
  handler = function() return "slow" end }}
"#
        ),
    );
    let host = fx.host_with(&format!(
        "[runtime]\nprobe_timeout_ms = 60000\n[sandbox]\nfs_roots = [{:?}]\n",
        fx.root().display().to_string()
    ));
    let runtime = common::two_worker_runtime();
    runtime.block_on(async {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (server_in, server_out) = tokio::io::split(server);
        let serving = {
            let host = host.clone();
            tokio::spawn(async move {
                host.serve_mcp(toolhost::Selection::default(), BufReader::new(server_in), server_out)
                    .await
            })
        };
        let (client_in, mut client_out) = tokio::io::split(client);
        let mut lines = BufReader::new(client_in).lines();
        let mut send = async |line: &str| {
            client_out.write_all(line.as_bytes()).await.unwrap();
            client_out.write_all(b"\n").await.unwrap();
        };
        send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#).await;
        lines.next_line().await.unwrap().expect("initialize answered");
        send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
        // The notifier's first look must not be a probe either; give it a moment by
        // round-tripping a ping (it does not list tools).
        send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#).await;
        lines.next_line().await.unwrap().expect("ping answered");
        fx.tool("b.lua", &simple_tool("b", "t", "y"));
        let reloading = {
            let host = host.clone();
            tokio::task::spawn_blocking(move || host.reload())
        };
        let notified = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            loop {
                let line = lines.next_line().await.unwrap().expect("a line");
                let message: Value = serde_json::from_str(&line).unwrap();
                if message["method"] == "notifications/tools/list_changed" {
                    break;
                }
            }
        })
        .await;
        // Let the probe end whatever happened, so nothing is left spinning.
        std::fs::write(&release, "go").unwrap();
        assert!(
            notified.is_ok(),
            "no list_changed within 30 s while the check_fn ran"
        );
        reloading.await.unwrap();
        serving.abort();
    });
}
