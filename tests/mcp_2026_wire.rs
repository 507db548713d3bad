//! Protocol 2026-07-28 on the wire, as raw JSON-RPC lines to `Host::serve_mcp`: what each
//! revision's answers carry, the subscription filter and the subscription's id as the
//! client wrote it.

mod common;

use common::{Fixture, simple_tool};
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};

/// The `_meta` every 2026-07-28 request carries.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    })
}

/// A client of `Host::serve_mcp` over an in-memory pipe.
struct Wire {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    out: WriteHalf<DuplexStream>,
    serving: tokio::task::JoinHandle<toolhost::Result<()>>,
}

impl Wire {
    fn start(host: &toolhost::Host) -> Self {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (server_in, server_out) = tokio::io::split(server);
        let serving = {
            let host = host.clone();
            tokio::spawn(async move {
                host.serve_mcp(
                    toolhost::Selection::default(),
                    BufReader::new(server_in),
                    server_out,
                )
                .await
            })
        };
        let (client_in, out) = tokio::io::split(client);
        Self {
            lines: BufReader::new(client_in).lines(),
            out,
            serving,
        }
    }

    async fn send(&mut self, message: Value) {
        let line = message.to_string();
        self.out.write_all(line.as_bytes()).await.unwrap();
        self.out.write_all(b"\n").await.unwrap();
    }

    async fn next_message(&mut self) -> Value {
        let line = self.lines.next_line().await.unwrap().expect("a line");
        serde_json::from_str(&line).unwrap()
    }

    /// Reads until the answer to request `id`, returning it and what came before.
    async fn answer(&mut self, id: &Value) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let message = self.next_message().await;
            if &message["id"] == id && message.get("method").is_none() {
                return (message, before);
            }
            before.push(message);
        }
    }
}

fn fixture() -> Fixture {
    let fx = Fixture::new();
    fx.tool("a.lua", &simple_tool("a", "t", "x"));
    fx
}

#[test]
fn a_2025_session_listing_has_no_caching_hints_and_no_result_type() {
    let fx = fixture();
    let host = fx.host();
    common::two_worker_runtime().block_on(async {
        let mut wire = Wire::start(&host);
        wire.send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        )
        .await;
        wire.answer(&json!(1)).await;
        wire.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        wire.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
            .await;
        let (listed, _) = wire.answer(&json!(2)).await;
        let result = &listed["result"];
        assert_eq!(result["tools"][0]["name"], "a", "{listed}");
        for absent in ["ttlMs", "cacheScope", "resultType"] {
            assert!(result.get(absent).is_none(), "{absent} in {listed}");
        }
        wire.serving.abort();
    });
}

#[test]
fn a_2026_request_needs_no_initialize_and_gets_result_type_and_caching_hints() {
    let fx = fixture();
    let host = fx.host();
    common::two_worker_runtime().block_on(async {
        let mut wire = Wire::start(&host);
        wire.send(json!({"jsonrpc": "2.0", "id": "l", "method": "tools/list",
            "params": {"_meta": meta()}}))
            .await;
        let (listed, _) = wire.answer(&json!("l")).await;
        let result = &listed["result"];
        assert_eq!(result["resultType"], "complete", "{listed}");
        assert_eq!(result["ttlMs"], 0, "the default [serve] list_ttl_ms");
        assert_eq!(result["cacheScope"], "private");
        wire.send(json!({"jsonrpc": "2.0", "id": "c", "method": "tools/call",
            "params": {"_meta": meta(), "name": "a", "arguments": {}}}))
            .await;
        let (called, _) = wire.answer(&json!("c")).await;
        assert_eq!(called["result"]["resultType"], "complete", "{called}");
        assert_eq!(called["result"]["content"][0]["text"], "x");
        wire.serving.abort();
    });
}

#[test]
fn a_2026_request_without_its_meta_fields_is_refused_naming_them() {
    let fx = fixture();
    let host = fx.host();
    common::two_worker_runtime().block_on(async {
        let mut wire = Wire::start(&host);
        wire.send(
            json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}),
        )
        .await;
        let (refused, _) = wire.answer(&json!(9)).await;
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains("clientCapabilities"), "{message}");
        wire.serving.abort();
    });
}

#[test]
fn only_a_subscription_that_asked_for_tool_changes_hears_of_them() {
    let fx = fixture();
    let host = fx.host();
    common::two_worker_runtime().block_on(async {
        let mut wire = Wire::start(&host);
        // A filter without tools: acknowledged empty, tagged with its id as written.
        wire.send(json!({"jsonrpc": "2.0", "id": "prompts-only",
            "method": "subscriptions/listen", "params": {"_meta": meta(),
            "notifications": {"promptsListChanged": true}}}))
            .await;
        let ack = wire.next_message().await;
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        assert_eq!(
            ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            "prompts-only"
        );
        assert_eq!(ack["params"]["notifications"], json!({}), "{ack}");
        wire.send(json!({"jsonrpc": "2.0", "id": 18446744073709551615u64,
            "method": "subscriptions/listen", "params": {"_meta": meta(),
            "notifications": {"toolsListChanged": true}}}))
            .await;
        let ack = wire.next_message().await;
        assert_eq!(
            ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            json!(18446744073709551615u64)
        );
        assert_eq!(
            ack["params"]["notifications"],
            json!({"toolsListChanged": true})
        );

        fx.tool("b.lua", &simple_tool("b", "t", "y"));
        let reload = host.clone();
        tokio::task::spawn_blocking(move || reload.reload())
            .await
            .unwrap();
        let changed = wire.next_message().await;
        assert_eq!(changed["method"], "notifications/tools/list_changed");
        assert_eq!(
            changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            json!(18446744073709551615u64)
        );
        // Had the other subscription been told too, it would show up before this answer.
        wire.send(
            json!({"jsonrpc": "2.0", "id": "after", "method": "tools/list",
            "params": {"_meta": meta()}}),
        )
        .await;
        let (_, before) = wire.answer(&json!("after")).await;
        assert!(before.is_empty(), "{before:?}");
        wire.serving.abort();
    });
}

#[test]
fn closing_the_input_ends_open_subscriptions_with_their_final_result() {
    let fx = fixture();
    let host = fx.host();
    common::two_worker_runtime().block_on(async {
        let mut wire = Wire::start(&host);
        wire.send(
            json!({"jsonrpc": "2.0", "id": "sub", "method": "subscriptions/listen",
            "params": {"_meta": meta(), "notifications": {"toolsListChanged": true}}}),
        )
        .await;
        let ack = wire.next_message().await;
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        wire.out.shutdown().await.unwrap();
        let (done, _) = wire.answer(&json!("sub")).await;
        assert_eq!(done["result"]["resultType"], "complete", "{done}");
        assert_eq!(
            done["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            "sub"
        );
        wire.serving.await.unwrap().unwrap();
    });
}

#[test]
fn a_listen_filter_keeps_at_most_a_thousand_served_uris() {
    let fx = fixture();
    fx.tool(
        "docs.lua",
        r#"registry.resource{ uri_template = "docs://{id}", name = "doc",
  read = function(p) return p.id end }"#,
    );
    let host = fx.host();
    common::two_worker_runtime().block_on(async {
        let mut wire = Wire::start(&host);
        // A hostile filter: 1,500 URIs, one no resource serves.
        let mut uris: Vec<String> = (0..1500).map(|i| format!("docs://{i}")).collect();
        uris[0] = "nope://x".to_string();
        wire.send(json!({"jsonrpc": "2.0", "id": "many",
            "method": "subscriptions/listen", "params": {"_meta": meta(),
            "notifications": {"resourceSubscriptions": uris}}}))
            .await;
        let ack = wire.next_message().await;
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        let accepted = ack["params"]["notifications"]["resourceSubscriptions"]
            .as_array()
            .expect("accepted URIs")
            .clone();
        assert_eq!(
            accepted.len(),
            999,
            "the first 1,000 looked at, less the unserved one"
        );
        assert_eq!(accepted[0], "docs://1");
        assert_eq!(accepted[998], "docs://999");
        wire.serving.abort();
    });
}
