//! `notifications/tools/list_changed` is sent only when what a session lists changed: not
//! for a reload that changed nothing, nor for one that only reported an error.

mod common;

use common::pipe_session::PipeSession as Session;
use common::{Fixture, simple_tool};

#[test]
fn list_changed_is_sent_only_when_the_listed_tools_change() {
    let fx = Fixture::new();
    fx.tool("a.lua", &simple_tool("a", "t", "x"));
    let host = fx.host();
    let runtime = common::two_worker_runtime();
    runtime.block_on(async {
        let mut session = Session::start(&host).await;
        // The session's notifier takes its first look at the tools before it listens.
        session
            .send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#)
            .await;
        session.next_message().await;

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
        while session.next_message().await["method"] != "notifications/tools/list_changed" {}
        session
            .send(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#)
            .await;
        loop {
            let message = session.next_message().await;
            assert_ne!(
                message["method"], "notifications/tools/list_changed",
                "a second notification"
            );
            if message["id"] == 3 {
                break;
            }
        }
        session.serving.abort();
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
        let mut session = Session::start(&host).await;
        // The notifier's first look must not be a probe either; give it a moment by
        // round-tripping a ping (it does not list tools).
        session
            .send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#)
            .await;
        session.next_message().await;
        fx.tool("b.lua", &simple_tool("b", "t", "y"));
        let reloading = {
            let host = host.clone();
            tokio::task::spawn_blocking(move || host.reload())
        };
        let notified = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            while session.next_message().await["method"] != "notifications/tools/list_changed" {}
        })
        .await;
        // Let the probe end whatever happened, so nothing is left spinning.
        std::fs::write(&release, "go").unwrap();
        assert!(
            notified.is_ok(),
            "no list_changed within 30 s while the check_fn ran"
        );
        reloading.await.unwrap();
        session.serving.abort();
    });
}
