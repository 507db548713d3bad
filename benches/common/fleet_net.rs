//! The network pieces of a fleet outside the library, shared by the fleet tests
//! (tests/common/fleet.rs includes this file) and the fleet bench (benches/fleet.rs):
//! [`Proxy`], a small round-robin TCP proxy — every client connection goes to the next
//! upstream, skipping one that refuses the connection, as a load balancer with health
//! checks would — and [`post_once`], a client that makes one request per connection, so
//! every request is balanced.
#![allow(dead_code)]

use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A round-robin TCP proxy on a loopback port, in a runtime of its own (stopped on drop).
pub struct Proxy {
    /// `127.0.0.1:PORT`.
    pub authority: String,
    /// Connections relayed to each upstream, in the order given.
    served: Arc<Vec<AtomicUsize>>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Proxy {
    /// Relays each new connection to the next of `upstreams` that accepts one.
    pub fn start(upstreams: Vec<String>) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a proxy port");
        listener.set_nonblocking(true).expect("non-blocking");
        let authority = listener.local_addr().expect("bound").to_string();
        let served: Arc<Vec<AtomicUsize>> =
            Arc::new(upstreams.iter().map(|_| AtomicUsize::new(0)).collect());
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("the proxy's runtime");
        let upstreams = Arc::new(upstreams);
        let counts = served.clone();
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
            let next = AtomicUsize::new(0);
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    continue;
                };
                let first = next.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(relay(client, upstreams.clone(), counts.clone(), first));
            }
        });
        Self {
            authority,
            served,
            runtime: Some(runtime),
        }
    }

    /// How many connections each upstream got.
    pub fn served(&self) -> Vec<usize> {
        self.served
            .iter()
            .map(|count| count.load(Ordering::Relaxed))
            .collect()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Relays `client` to the first upstream from `first` on (round robin) that accepts; with
/// none, the client's connection just closes.
async fn relay(
    mut client: tokio::net::TcpStream,
    upstreams: Arc<Vec<String>>,
    served: Arc<Vec<AtomicUsize>>,
    first: usize,
) {
    let _ = client.set_nodelay(true);
    for step in 0..upstreams.len() {
        let index = (first + step) % upstreams.len();
        let Ok(mut upstream) = tokio::net::TcpStream::connect(&upstreams[index]).await else {
            continue;
        };
        let _ = upstream.set_nodelay(true);
        served[index].fetch_add(1, Ordering::Relaxed);
        let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        return;
    }
}

/// One HTTP answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Answer {
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

    /// The JSON-RPC message: the JSON body, or the last JSON `data:` of an SSE stream.
    pub fn message(&self) -> Option<serde_json::Value> {
        let text = self.text();
        if let Ok(value) = serde_json::from_str(&text) {
            return Some(value);
        }
        text.lines()
            .rev()
            .filter_map(|line| line.strip_prefix("data:"))
            .find_map(|data| serde_json::from_str(data.trim()).ok())
    }
}

/// POSTs `body` to `/mcp` on a new connection (`Connection: close`) and reads the whole
/// answer; `Err` says what went wrong instead of panicking (an upstream may be killed).
pub fn post_once(authority: &str, headers: &[(&str, &str)], body: &[u8]) -> Result<Answer, String> {
    let mut stream = TcpStream::connect(authority).map_err(|e| format!("connect: {e}"))?;
    // A liveness bound, not a timing assertion: an answer never takes this long.
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(|e| e.to_string())?;
    let _ = stream.set_nodelay(true);
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Length: {}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    stream.write_all(&bytes).map_err(|e| format!("send: {e}"))?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .map_err(|e| format!("read: {e}"))?;
    parse_answer(&raw)
}

/// An HTTP/1.1 answer read to the connection's end.
fn parse_answer(raw: &[u8]) -> Result<Answer, String> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("no complete HTTP head in {} bytes", raw.len()))?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("not an HTTP answer: {head}"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_string(), value.trim().to_string()))
        .collect();
    let mut answer = Answer {
        status,
        headers,
        body: Vec::new(),
    };
    let rest = &raw[split + 4..];
    answer.body = if answer
        .header("transfer-encoding")
        .is_some_and(|te| te.eq_ignore_ascii_case("chunked"))
    {
        dechunk(rest)?
    } else {
        rest.to_vec()
    };
    Ok(answer)
}

/// A chunked body's bytes; one cut short (the server died) is an error.
fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let line_end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("a chunked body cut short")?;
        let size_text = String::from_utf8_lossy(&rest[..line_end]);
        let size = usize::from_str_radix(size_text.trim(), 16)
            .map_err(|_| format!("bad chunk size {size_text:?}"))?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        if rest.len() < size + 2 {
            return Err("a chunk cut short".into());
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

/// The `HOST:PORT` a `toolhost serve --http` child (stderr piped) prints once it listens;
/// the rest of its stderr is read and dropped from then on, so it never blocks on a full
/// pipe.
pub fn serving_authority(child: &mut std::process::Child) -> String {
    let stderr = child.stderr.take().expect("the server's stderr is piped");
    let mut lines = std::io::BufReader::new(stderr).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("the server prints its address")
            .expect("a line");
        if let Some(url) = line.split("serving MCP at ").nth(1) {
            break url.trim().to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    url.trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string()
}
