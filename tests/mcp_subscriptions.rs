//! A 2025-11-25 session hears of resource and prompt changes: `resources/list_changed` and
//! `prompts/list_changed` only when what it lists changed, `resources/updated` for the URIs
//! it subscribed to when the file that defines their resource is saved (a template: every
//! subscribed URI it matches), nothing after `resources/unsubscribe`; and a session sees
//! only the resources and prompts of its toolset selection (docs/mcp-server.md).

mod common;

use common::Fixture;
use common::pipe_session::PipeSession;
use serde_json::{Value, json};

const NOTES: &str = r#"
registry.resource{ uri = "notes://a", name = "a", toolset = "notes",
  read = function() return "A" end }
registry.resource{ uri_template = "docs://{id}", name = "doc", toolset = "notes",
  read = function(p) return "doc " .. p.id end }
"#;

const OTHER: &str = r#"
registry.resource{ uri = "other://x", name = "x", toolset = "other",
  read = function() return "X" end }
registry.prompt{ name = "hidden", toolset = "other", render = function() return "H" end }
"#;

fn fixture() -> Fixture {
    let fx = Fixture::new();
    fx.tool("notes.lua", NOTES);
    fx.tool("other.lua", OTHER);
    fx
}

/// Reloads `host` off the async workers.
async fn reload(host: &toolhost::Host) -> toolhost::ReloadEvent {
    let host = host.clone();
    tokio::task::spawn_blocking(move || host.reload())
        .await
        .expect("reload ran")
}

/// The notifications that arrive before the answer to a ping: everything the server sent
/// in between (it answers in order, after the notifications already queued).
async fn flush(session: &mut PipeSession, id: u64) -> Vec<Value> {
    let mut seen = Vec::new();
    session.request(id, "ping", json!({}), &mut seen).await;
    seen
}

fn methods(messages: &[Value]) -> Vec<&str> {
    messages
        .iter()
        .filter_map(|m| m["method"].as_str())
        .collect()
}

fn updated(messages: &[Value]) -> Vec<&str> {
    let mut uris: Vec<&str> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/resources/updated")
        .filter_map(|m| m["params"]["uri"].as_str())
        .collect();
    uris.sort();
    uris
}

#[test]
fn resources_list_changed_is_sent_only_when_the_resource_listing_changes() {
    let fx = fixture();
    let host = fx.host();
    common::two_worker_runtime().block_on(async {
        let mut session = PipeSession::start(&host).await;
        flush(&mut session, 2).await;
        // Nothing changed: nothing is sent.
        reload(&host).await;
        assert_eq!(methods(&flush(&mut session, 3).await), Vec::<&str>::new());
        // A new resource: the resource listing changed, and only it.
        fx.tool(
            "more.lua",
            r#"registry.resource{ uri = "more://m", name = "m", read = function() return "M" end }"#,
        );
        reload(&host).await;
        while session.next_message().await["method"] != "notifications/resources/list_changed" {}
        let after = flush(&mut session, 4).await;
        assert!(
            !methods(&after).iter().any(|m| m.ends_with("list_changed")),
            "{after:?}"
        );
        session.serving.abort();
    });
}

#[test]
fn prompts_list_changed_is_sent_when_a_prompt_appears() {
    let fx = fixture();
    let host = fx.host();
    common::two_worker_runtime().block_on(async {
        let mut session = PipeSession::start(&host).await;
        flush(&mut session, 2).await;
        fx.tool(
            "prompt.lua",
            r#"registry.prompt{ name = "p", render = function() return "P" end }"#,
        );
        reload(&host).await;
        let message = session.next_message().await;
        assert_eq!(message["method"], "notifications/prompts/list_changed");
        session.serving.abort();
    });
}

#[test]
fn capabilities_offer_subscriptions_and_list_changed_when_resources_exist() {
    let fx = fixture();
    let host = fx.host();
    common::two_worker_runtime().block_on(async {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (server_in, server_out) = tokio::io::split(server);
        let serving = tokio::spawn({
            let host = host.clone();
            async move {
                host.serve_mcp(
                    toolhost::Selection::default(),
                    tokio::io::BufReader::new(server_in),
                    server_out,
                )
                .await
            }
        });
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        let (client_in, mut out) = tokio::io::split(client);
        out.write_all(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
"#).await.unwrap();
        let mut lines = tokio::io::BufReader::new(client_in).lines();
        let answer: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        let capabilities = &answer["result"]["capabilities"];
        assert_eq!(capabilities["resources"], json!({ "subscribe": true, "listChanged": true }));
        assert_eq!(capabilities["prompts"], json!({ "listChanged": true }));
        serving.abort();
    });
}

#[test]
fn a_saved_resource_file_updates_each_subscribed_uri_it_serves() {
    let fx = fixture();
    let host = fx.host();
    common::two_worker_runtime().block_on(async {
        let mut session = PipeSession::start(&host).await;
        let mut seen = Vec::new();
        for (id, uri) in [
            (2, "notes://a"),
            (3, "docs://1"),
            (4, "docs://2"),
            (5, "other://x"),
        ] {
            let answer = session
                .request(id, "resources/subscribe", json!({ "uri": uri }), &mut seen)
                .await;
            assert_eq!(answer["result"], json!({}), "{answer}");
        }
        // Saving notes.lua updates what it defines; other.lua's resource is untouched.
        fx.tool("notes.lua", &NOTES.replace("\"A\"", "\"A, edited\""));
        reload(&host).await;
        // The notifier sends the updates on its own task: wait for all three (a ping's
        // answer may overtake them), then let anything wrongly sent after them arrive.
        let mut uris: Vec<String> = Vec::new();
        while uris.len() < 3 {
            let message = session.next_message().await;
            if message["method"] == "notifications/resources/updated" {
                uris.push(message["params"]["uri"].as_str().unwrap_or_default().into());
            }
        }
        let rest = flush(&mut session, 6).await;
        uris.extend(updated(&rest).into_iter().map(String::from));
        uris.sort();
        assert_eq!(uris, ["docs://1", "docs://2", "notes://a"], "{rest:?}");
        session.serving.abort();
    });
}

#[test]
fn an_unsubscribed_uri_hears_nothing_more() {
    let fx = fixture();
    let host = fx.host();
    common::two_worker_runtime().block_on(async {
        let mut session = PipeSession::start(&host).await;
        let mut seen = Vec::new();
        session
            .request(
                2,
                "resources/subscribe",
                json!({ "uri": "notes://a" }),
                &mut seen,
            )
            .await;
        let answer = session
            .request(
                3,
                "resources/unsubscribe",
                json!({ "uri": "notes://a" }),
                &mut seen,
            )
            .await;
        assert_eq!(answer["result"], json!({}), "{answer}");
        fx.tool("notes.lua", &NOTES.replace("\"A\"", "\"A, edited\""));
        reload(&host).await;
        // A second subscription, to a resource of the other file, shows when the reload's
        // news have gone out.
        session
            .request(
                4,
                "resources/subscribe",
                json!({ "uri": "other://x" }),
                &mut seen,
            )
            .await;
        fx.tool("other.lua", &OTHER.replace("\"X\"", "\"X, edited\""));
        reload(&host).await;
        loop {
            let message = session.next_message().await;
            if message["method"] == "notifications/resources/updated" {
                assert_eq!(message["params"]["uri"], "other://x", "{message}");
                break;
            }
        }
        session.serving.abort();
    });
}

#[test]
fn subscribing_to_a_uri_no_resource_serves_is_resource_not_found() {
    let fx = fixture();
    let host = fx.host();
    common::two_worker_runtime().block_on(async {
        let mut session = PipeSession::start(&host).await;
        let answer = session
            .request(
                2,
                "resources/subscribe",
                json!({ "uri": "nope://x" }),
                &mut Vec::new(),
            )
            .await;
        assert_eq!(answer["error"]["code"], -32002, "{answer}");
        assert_eq!(answer["error"]["data"]["uri"], "nope://x", "{answer}");
        session.serving.abort();
    });
}

#[test]
fn a_session_watches_at_most_a_thousand_uris() {
    let fx = fixture();
    let host = fx.host();
    common::two_worker_runtime().block_on(async {
        let mut session = PipeSession::start(&host).await;
        let mut seen = Vec::new();
        for id in 0..1000u64 {
            let uri = format!("docs://{id}");
            let answer = session
                .request(
                    id + 10,
                    "resources/subscribe",
                    json!({ "uri": uri }),
                    &mut seen,
                )
                .await;
            assert_eq!(answer["result"], json!({}), "{answer}");
        }
        let answer = session
            .request(
                5000,
                "resources/subscribe",
                json!({ "uri": "docs://more" }),
                &mut seen,
            )
            .await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        // One already watched may be asked again.
        let answer = session
            .request(
                5001,
                "resources/subscribe",
                json!({ "uri": "docs://1" }),
                &mut seen,
            )
            .await;
        assert_eq!(answer["result"], json!({}), "{answer}");
        session.serving.abort();
    });
}

#[test]
fn a_resource_outside_the_selection_is_neither_listed_nor_readable() {
    let fx = fixture();
    let host = fx.host();
    let selection = toolhost::Selection::default().with_toolsets(["notes"]);
    common::two_worker_runtime().block_on(async {
        let mut session = PipeSession::start_with(&host, selection).await;
        let mut seen = Vec::new();
        let listed = session
            .request(2, "resources/list", json!({}), &mut seen)
            .await;
        let uris: Vec<&str> = listed["result"]["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["uri"].as_str())
            .collect();
        assert_eq!(uris, ["notes://a"], "{listed}");
        let read = session
            .request(
                3,
                "resources/read",
                json!({ "uri": "other://x" }),
                &mut seen,
            )
            .await;
        assert_eq!(read["error"]["code"], -32002, "{read}");
        let subscribe = session
            .request(
                4,
                "resources/subscribe",
                json!({ "uri": "other://x" }),
                &mut seen,
            )
            .await;
        assert_eq!(subscribe["error"]["code"], -32002, "{subscribe}");
        session.serving.abort();
    });
}

#[test]
fn a_prompt_outside_the_selection_is_neither_listed_nor_rendered() {
    let fx = fixture();
    let host = fx.host();
    let selection = toolhost::Selection::default().with_disabled(["other"]);
    common::two_worker_runtime().block_on(async {
        let mut session = PipeSession::start_with(&host, selection).await;
        let mut seen = Vec::new();
        let listed = session
            .request(2, "prompts/list", json!({}), &mut seen)
            .await;
        assert_eq!(listed["result"]["prompts"], json!([]), "{listed}");
        let got = session
            .request(3, "prompts/get", json!({ "name": "hidden" }), &mut seen)
            .await;
        assert!(got["error"]["code"].is_i64(), "{got}");
        session.serving.abort();
    });
}
