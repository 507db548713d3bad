//! A bare HTTP/1.1 keep-alive client over one TCP connection, for tests that need to see
//! exactly what `serve --http` does on the wire (timing, connection handling, status and
//! body of refusals) without a client library's retries and buffering in between.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    /// A header's value (name compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The JSON-RPC message of the body: a JSON body, or the last `data:` event of an SSE
    /// stream that holds JSON.
    pub fn message(&self) -> Value {
        let text = self.text();
        if let Ok(value) = serde_json::from_str(&text) {
            return value;
        }
        text.lines()
            .rev()
            .filter_map(|line| line.strip_prefix("data:"))
            .find_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .unwrap_or_else(|| panic!("no JSON-RPC message in: {text}"))
    }
}

/// One keep-alive connection.
pub struct RawHttp {
    reader: BufReader<TcpStream>,
    authority: String,
}

impl RawHttp {
    /// Connects to `authority` (`HOST:PORT`); reads give up after 30 s rather than hang.
    pub fn connect(authority: &str) -> Self {
        let stream = TcpStream::connect(authority).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        stream.set_nodelay(true).unwrap();
        Self {
            reader: BufReader::new(stream),
            authority: authority.to_string(),
        }
    }

    /// Sends one request and reads its whole answer.
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Reply {
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n",
            self.authority,
            body.len()
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        // One write: the client's own Nagle would otherwise hold the body back.
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body);
        self.reader.get_mut().write_all(&bytes).expect("send");
        self.read_reply()
    }

    /// A JSON-RPC message POSTed to `/mcp` (in `session`, if given).
    pub fn mcp(&mut self, session: Option<&str>, message: &str) -> Reply {
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        if let Some(session) = session {
            headers.push(("Mcp-Session-Id", session));
        }
        self.request("POST", "/mcp", &headers, message.as_bytes())
    }

    /// `initialize` then `notifications/initialized`: the new session's id.
    pub fn open_session(&mut self) -> String {
        let reply = self.mcp(None, INITIALIZE);
        assert_eq!(reply.status, 200, "{}", reply.text());
        let session = reply
            .header("mcp-session-id")
            .expect("a session id")
            .to_string();
        let done = self.mcp(Some(&session), INITIALIZED);
        assert_eq!(done.status, 202, "{}", done.text());
        session
    }

    fn read_reply(&mut self) -> Reply {
        let status_line = self.line();
        let status = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP status line: {status_line:?}"));
        let mut headers = Vec::new();
        loop {
            let line = self.line();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                headers.push((name.trim().to_string(), value.trim().to_string()));
            }
        }
        let mut reply = Reply {
            status,
            headers,
            body: Vec::new(),
        };
        if reply
            .header("transfer-encoding")
            .is_some_and(|te| te.eq_ignore_ascii_case("chunked"))
        {
            loop {
                let size = usize::from_str_radix(self.line().trim(), 16).expect("chunk size");
                if size == 0 {
                    while !self.line().is_empty() {}
                    break;
                }
                let mut chunk = vec![0; size + 2];
                self.reader.read_exact(&mut chunk).expect("chunk");
                reply.body.extend_from_slice(&chunk[..size]);
            }
        } else if let Some(length) = reply.header("content-length") {
            let mut body = vec![0; length.parse().expect("content-length")];
            self.reader.read_exact(&mut body).expect("body");
            reply.body = body;
        } else {
            self.reader.read_to_end(&mut reply.body).expect("body");
        }
        reply
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("read a line");
        line.trim_end_matches(['\r', '\n']).to_string()
    }
}

pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// A `tools/call` of `name` with `arguments` (JSON text), id `id`.
pub fn tools_call(id: u64, name: &str, arguments: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{arguments}}}}}"#
    )
}
