//! A fleet: N `toolhost serve --http` replicas on loopback ports sharing one configuration
//! (the same tools, the same `[serve] state_key_env` key passed in each child's
//! environment, the same store), each killed when dropped, behind [`Proxy`], a small
//! round-robin TCP proxy (benches/common/fleet_net.rs): every client connection goes to
//! the next replica, skipping one that refuses the connection (as a load balancer with
//! health checks would). Clients make one request per connection ([`post_once`]), so
//! every request is balanced.
//!
//! The store backend is a parameter ([`Backend`]): the fleet tests run on a shared SQLite
//! file; a shared PostgreSQL database is the same fleet with another `[store]` table.

use super::Fixture;
use serde_json::{Value, json};
use std::process::{Child, Command};

// The proxy and the one-request-per-connection client, shared with the fleet bench.
#[path = "../../benches/common/fleet_net.rs"]
mod fleet_net;
#[allow(unused_imports)]
pub use fleet_net::{Answer, Proxy, post_once};

/// The variable replicas read the shared state key from (`[serve] state_key_env`).
pub const STATE_KEY_ENV: &str = "TOOLHOST_FLEET_STATE_KEY";
/// The key every replica of a fleet gets (at least 32 bytes).
const STATE_KEY: &str = "fleet-test-state-key-0123456789abcdef";
/// The protocol revision of the fleet's clients.
pub const MODERN: &str = "2026-07-28";

/// Where the replicas of a fleet keep their shared state.
pub enum Backend {
    /// One SQLite file in the fixture, opened by every replica.
    Sqlite,
    /// One PostgreSQL database of its own (dropped with the backend); its URL, password
    /// included, goes to the children's environment only, as `TOOLHOST_DATABASE_URL`.
    Postgres(super::pg::TestDb),
}

impl Backend {
    /// A fresh PostgreSQL database on the main test cluster.
    pub fn postgres() -> Self {
        Backend::Postgres(super::pg::TestDb::new())
    }
}

impl Backend {
    /// The `[store]` table of the fleet's configuration.
    fn store_toml(&self) -> String {
        match self {
            Backend::Sqlite => "[store]\npath = \"fleet-store.sqlite3\"\n".into(),
            Backend::Postgres(_) => {
                "[store]\nbackend = \"postgres\"\nurl_env = \"TOOLHOST_DATABASE_URL\"\n".into()
            }
        }
    }

    /// What the children's environment needs for it.
    fn env(&self) -> Vec<(&'static str, String)> {
        match self {
            Backend::Sqlite => Vec::new(),
            Backend::Postgres(db) => vec![("TOOLHOST_DATABASE_URL", db.url())],
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
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
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
    // `Mcp-Name` mirrors the request's target: a tool's name, or a task's id.
    let name = params["name"]
        .as_str()
        .or(params["taskId"].as_str())
        .map(str::to_string);
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let mut headers = vec![("MCP-Protocol-Version", MODERN), ("Mcp-Method", method)];
    if let Some(name) = name.as_deref() {
        headers.push(("Mcp-Name", name));
    }
    let answer = post_once(authority, &headers, body.to_string().as_bytes())?;
    if answer.status != 200 && answer.status != 400 {
        return Err(format!("HTTP {}: {}", answer.status, answer.text()));
    }
    answer
        .message()
        .ok_or_else(|| format!("no JSON-RPC message in: {}", answer.text()))
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
