//! A client of `Host::serve_mcp` over an in-memory pipe, past `initialize` (2025-11-25
//! session model), reading the server's messages line by line.

use serde_json::Value;
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};

/// One session of `Host::serve_mcp`.
pub struct PipeSession {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    out: WriteHalf<DuplexStream>,
    /// The server's task (abort it to end the session).
    pub serving: tokio::task::JoinHandle<toolhost::Result<()>>,
}

impl PipeSession {
    /// A session of `host` serving every tool.
    pub async fn start(host: &toolhost::Host) -> Self {
        Self::start_with(host, toolhost::Selection::default()).await
    }

    /// A session of `host` serving `selection`.
    pub async fn start_with(host: &toolhost::Host, selection: toolhost::Selection) -> Self {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (server_in, server_out) = tokio::io::split(server);
        let serving = {
            let host = host.clone();
            tokio::spawn(async move {
                host.serve_mcp(selection, BufReader::new(server_in), server_out)
                    .await
            })
        };
        let (client_in, out) = tokio::io::split(client);
        let mut session = Self {
            lines: BufReader::new(client_in).lines(),
            out,
            serving,
        };
        session.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#).await;
        session.next_message().await;
        session
            .send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        session
    }

    /// Sends one JSON-RPC message (a line).
    pub async fn send(&mut self, line: &str) {
        self.out.write_all(line.as_bytes()).await.unwrap();
        self.out.write_all(b"\n").await.unwrap();
    }

    /// The server's next message.
    pub async fn next_message(&mut self) -> Value {
        // A liveness bound, not a timing assertion: a message that never comes fails the
        // test instead of hanging it.
        let line = tokio::time::timeout(std::time::Duration::from_secs(20), self.lines.next_line())
            .await
            .expect("a message within 20 s")
            .unwrap()
            .expect("a line");
        serde_json::from_str(&line).unwrap()
    }

    /// Sends the request `id` of `method` with `params` and returns its answer; the
    /// notifications that came before it are added to `seen`.
    pub async fn request(
        &mut self,
        id: u64,
        method: &str,
        params: Value,
        seen: &mut Vec<Value>,
    ) -> Value {
        let request = serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": method, "params": params,
        });
        self.send(&request.to_string()).await;
        loop {
            let message = self.next_message().await;
            if message["id"] == id {
                return message;
            }
            seen.push(message);
        }
    }
}
