//! A fleet: N `toolhost serve --http` replicas on loopback ports sharing one configuration
//! (the same tools, the same `[serve] state_key_env` key passed in each child's
//! environment, the same store), each killed when dropped, behind [`Proxy`], a small
//! round-robin TCP proxy: every client connection goes to the next replica, skipping one
//! that refuses the connection (as a load balancer with health checks would). Clients make
//! one request per connection ([`post_once`]), so every request is balanced.
//!
//! The store backend is a parameter ([`Backend`]): the fleet tests run on a shared SQLite
//! file; a shared PostgreSQL database is the same fleet with another `[store]` table.

use super::Fixture;
use super::raw_http::Reply;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The variable replicas read the shared state key from (`[serve] state_key_env`).
pub const STATE_KEY_ENV: &str = "TOOLHOST_FLEET_STATE_KEY";
/// The key every replica of a fleet gets (at least 32 bytes).
const STATE_KEY: &str = "fleet-test-state-key-0123456789abcdef";
/// The protocol revision of the fleet's clients.
pub const MODERN: &str = "2026-07-28";

/// Where the replicas of a fleet keep their shared state.
#[derive(Debug, Clone)]
pub enum Backend {
    /// One SQLite file in the fixture, opened by every replica.
    Sqlite,
    /// One PostgreSQL database (`url` with its password; passed in the children's
    /// environment only, as `TOOLHOST_DATABASE_URL`).
    Postgres { url: String },
}

impl Backend {
    /// The `[store]` table of the fleet's configuration.
    fn store_toml(&self) -> String {
        match self {
            Backend::Sqlite => "[store]\npath = \"fleet-store.sqlite3\"\n".into(),
            Backend::Postgres { .. } => {
                "[store]\nbackend = \"postgres\"\nurl_env = \"TOOLHOST_DATABASE_URL\"\n".into()
            }
        }
    }

    /// What the children's environment needs for it.
    fn env(&self) -> Vec<(&'static str, String)> {
        match self {
            Backend::Sqlite => Vec::new(),
            Backend::Postgres { url } => vec![("TOOLHOST_DATABASE_URL", url.clone())],
        }
    }
}

/// How the replicas serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `serve --http --stateless`: any client, no sessions.
    Stateless,
    /// `serve --http` with sessions (2026-07-28 clients need none).
    Sessions,
}

/// One `toolhost serve --http` process.
pub struct Replica {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub authority: String,
}

impl Replica {
    /// SIGKILL: the process ends at once, whatever it was doing.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Replicas sharing one configuration in a fixture.
pub struct Fleet {
    pub replicas: Vec<Replica>,
}

impl Fleet {
    /// Starts `count` replicas serving the tools of `fx` with `backend` and `extra`
    /// configuration (tables other than `[store]` and `[serve]`), each once it listens.
    pub fn start(fx: &Fixture, backend: &Backend, mode: Mode, count: usize, extra: &str) -> Self {
        let config = format!(
            "{}\n[serve]\nstate_key_env = \"{STATE_KEY_ENV}\"\n\n{extra}",
            backend.store_toml()
        );
        fx.write("toolhost.toml", config);
        let replicas = (0..count)
            .map(|index| start_replica(fx, backend, mode, index, STATE_KEY))
            .collect();
        Self { replicas }
    }

    /// Starts one more replica of the fleet's configuration with another state key (a
    /// replica misconfigured: its seals are not the fleet's).
    pub fn stranger(fx: &Fixture, backend: &Backend, mode: Mode) -> Replica {
        start_replica(
            fx,
            backend,
            mode,
            99,
            "another-key-entirely-0123456789abcdef",
        )
    }

    /// The replicas' addresses.
    pub fn authorities(&self) -> Vec<String> {
        self.replicas.iter().map(|r| r.authority.clone()).collect()
    }
}

fn start_replica(fx: &Fixture, backend: &Backend, mode: Mode, index: usize, key: &str) -> Replica {
    let mut command = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"));
    command
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        .env(STATE_KEY_ENV, key)
        .envs(backend.env())
        // A cache of its own: replicas share state through the store only.
        .args(["--cache-dir", &format!("cache-{index}"), "serve", "--http"])
        .arg("127.0.0.1:0");
    if mode == Mode::Stateless {
        command.arg("--stateless");
    }
    let (child, url) = super::spawn_http_server(command);
    let authority = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    Replica { child, authority }
}

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

/// The `_meta` of a 2026-07-28 request (no session), declaring `capabilities`.
pub fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": { "name": "fleet-test", "version": "1" }
    })
}

/// A 2026-07-28 request `method` with `params` (its `_meta` declaring `capabilities`) over
/// one new connection to `authority` that closes after the answer: the JSON-RPC answer, or
/// why there is none (refused, reset, cut short).
pub fn request(
    authority: &str,
    method: &str,
    mut params: Value,
    capabilities: Value,
) -> Result<Value, String> {
    params["_meta"] = meta(capabilities);
    let name = params["name"].as_str().map(str::to_string);
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let mut headers = vec![("MCP-Protocol-Version", MODERN), ("Mcp-Method", method)];
    if let Some(name) = name.as_deref() {
        headers.push(("Mcp-Name", name));
    }
    let reply = post_once(authority, &headers, body.to_string().as_bytes())?;
    if reply.status != 200 && reply.status != 400 {
        return Err(format!("HTTP {}: {}", reply.status, reply.text()));
    }
    message(&reply).ok_or_else(|| format!("no JSON-RPC message in: {}", reply.text()))
}

/// The JSON-RPC message of a reply: its JSON body, or the last JSON `data:` of its SSE
/// stream.
fn message(reply: &Reply) -> Option<Value> {
    let text = reply.text();
    if let Ok(value) = serde_json::from_str(&text) {
        return Some(value);
    }
    text.lines()
        .rev()
        .filter_map(|line| line.strip_prefix("data:"))
        .find_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
}

/// The `result` of [`request`], panicking with the error otherwise.
pub fn result(authority: &str, method: &str, params: Value, capabilities: Value) -> Value {
    let answer = request(authority, method, params, capabilities)
        .unwrap_or_else(|why| panic!("{method} via {authority}: {why}"));
    answer
        .get("result")
        .cloned()
        .unwrap_or_else(|| panic!("{method} via {authority} failed: {answer}"))
}

/// POSTs `body` to `/mcp` on a new connection (`Connection: close`) and reads the whole
/// answer; `Err` says what went wrong instead of panicking (a replica may be killed).
pub fn post_once(
    authority: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Reply, String> {
    let mut stream = TcpStream::connect(authority).map_err(|e| format!("connect: {e}"))?;
    // A liveness bound, not a timing assertion: a reply never takes this long.
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
    parse_reply(&raw)
}

/// An HTTP/1.1 answer read to the connection's end.
fn parse_reply(raw: &[u8]) -> Result<Reply, String> {
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
    let mut reply = Reply {
        status,
        headers,
        body: Vec::new(),
    };
    let rest = &raw[split + 4..];
    reply.body = if reply
        .header("transfer-encoding")
        .is_some_and(|te| te.eq_ignore_ascii_case("chunked"))
    {
        dechunk(rest)?
    } else {
        rest.to_vec()
    };
    Ok(reply)
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
