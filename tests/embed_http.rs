//! `Host::serve_mcp_http`: an embedder serves its host over streamable HTTP and stops it.
#![cfg(feature = "http")]

mod common;

use common::Fixture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn host() -> (Fixture, toolhost::Host) {
    let fx = Fixture::new();
    fx.tool("echo.lua", &common::simple_tool("echo", "t", "hi"));
    let host = fx.host();
    (fx, host)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_http_server_answers_healthz_and_stops_on_request() {
    let (_fx, host) = host();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        host.serve_mcp_http(
            toolhost::Selection::default(),
            listener,
            toolhost::HttpOptions::default(),
            shutdown,
        )
        .await
    });

    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let body = response.split("\r\n\r\n").nth(1).unwrap_or_default();
    let health: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(health["status"], "ok");
    assert_eq!(health["tools"], 1);

    stop.send(()).unwrap();
    let served = tokio::time::timeout(std::time::Duration::from_secs(20), server)
        .await
        .expect("the server stops")
        .unwrap();
    assert!(served.is_ok(), "{served:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_listener_without_a_token_is_refused() {
    let (_fx, host) = host();
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let refused = host
        .serve_mcp_http(
            toolhost::Selection::default(),
            listener,
            toolhost::HttpOptions::default(),
            std::future::pending(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(refused, toolhost::Error::Exposed { .. }),
        "{refused}"
    );
}
