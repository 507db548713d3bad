//! Shared helpers for the integration tests: a temp directory with real tool files, a
//! host built from it, and a blocking call helper.
#![allow(dead_code)]

pub mod ask_scenarios;
pub mod fastmcp;
pub mod fixture_server;
pub mod fleet;
pub mod git_repo;
pub mod mcp_client;
pub mod oauth;
pub mod openai_sdk;
pub mod otlp;
pub mod pg;
pub mod pinned_venv;
pub mod pipe_session;
pub mod raw_http;
pub mod stores;
pub mod ts_client;
pub mod tty;

use serde_json::Value;
use std::path::{Path, PathBuf};
use tempfile::TempDir;
use toolhost::Verdict;
use toolhost::{CallContext, Host, HostBuilder};

/// A temp directory holding `tools-lua/`, `cache/` and optionally `toolhost.toml`.
pub struct Fixture {
    pub dir: TempDir,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("tools-lua")).expect("tools dir");
        Self { dir }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn tools(&self) -> PathBuf {
        self.root().join("tools-lua")
    }

    pub fn cache(&self) -> PathBuf {
        self.root().join("cache")
    }

    /// The `toolhost` binary run in the fixture root with the fixture's cache directory and
    /// no configuration taken from the environment.
    pub fn toolhost(&self) -> assert_cmd::Command {
        let mut cmd = assert_cmd::Command::new(assert_cmd::cargo::cargo_bin!("toolhost"));
        cmd.current_dir(self.root())
            .env_remove("TOOLHOST_CONFIG")
            // The shipped library would add its tools to every listing the tests read.
            .env("TOOLHOST_NO_LIBRARY", "1")
            .arg("--cache-dir")
            .arg(self.cache());
        cmd
    }

    /// `toolhost list --json` in the fixture: every tool's entry (the run must succeed).
    pub fn list_json(&self) -> Vec<Value> {
        let out = self
            .toolhost()
            .args(["list", "--json"])
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("JSON array")
    }

    /// Writes `content` to `rel` (relative to the fixture root), creating parents.
    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, content).expect("write");
        path
    }

    /// A tool file in `tools-lua/`.
    pub fn tool(&self, name: &str, content: &str) -> PathBuf {
        self.write(&format!("tools-lua/{name}"), content)
    }

    /// The fixture's own store file (tests never touch the user's data directory).
    pub fn store_file(&self) -> PathBuf {
        self.root().join("store.sqlite3")
    }

    pub fn builder(&self) -> HostBuilder {
        Host::builder()
            .tools_dir(self.tools())
            .cache_dir(self.cache())
            .store_file(self.store_file())
            .default_config()
    }

    pub fn host(&self) -> Host {
        self.builder().build().expect("host builds")
    }

    /// A host configured by `toml` (written to `toolhost.toml` in the fixture).
    pub fn host_with(&self, toml: &str) -> Host {
        let path = self.write("toolhost.toml", toml);
        Host::builder()
            .tools_dir(self.tools())
            .cache_dir(self.cache())
            .store_file(self.store_file())
            .config_file(path)
            .build()
            .expect("host builds")
    }
}

/// The verdict for the file whose path ends with `suffix`.
pub fn verdict<'a>(verdicts: &'a [Verdict], suffix: &str) -> &'a Verdict {
    verdicts
        .iter()
        .find(|v| v.path.ends_with(suffix))
        .unwrap_or_else(|| panic!("no verdict for {suffix}: {verdicts:#?}"))
}

/// The load error of the file whose path ends with `suffix`.
pub fn error_of(host: &Host, suffix: &str) -> String {
    let verdicts = host.discovery();
    verdict(&verdicts, suffix)
        .error
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_else(|| panic!("{suffix} loaded without error"))
}

/// Runs one call to completion; its JSON as a model sees it (docs/lua-api.md, "What a handler returns").
pub fn call(host: &Host, name: &str, args: Value) -> Value {
    call_in(host, name, args, &CallContext::default())
}

pub fn call_in(host: &Host, name: &str, args: Value, ctx: &CallContext) -> Value {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime
        .block_on(host.handle_function_call(name, args, ctx))
        .into_json()
}

/// Names of the tools visible to `scope`.
pub fn names(host: &Host, scope: Option<&str>) -> Vec<String> {
    host.tools(scope).into_iter().map(|t| t.name).collect()
}

/// A minimal valid registration of `name` in `toolset` returning `result`.
pub fn simple_tool(name: &str, toolset: &str, result: &str) -> String {
    format!(
        r#"registry.register{{
  name = "{name}", toolset = "{toolset}",
  schema = {{ description = "d", parameters = {{ type = "object", properties = {{}} }} }},
  handler = function() return "{result}" end,
}}
"#
    )
}

/// A multi-thread runtime with two workers (the machine's cores), timers and IO on.
pub fn two_worker_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// The JSON a model sees of each result of a batch.
pub fn json_all(results: Vec<toolhost::ToolResult>) -> Vec<Value> {
    results
        .into_iter()
        .map(toolhost::ToolResult::into_json)
        .collect()
}

/// Starts `command` (a `toolhost … serve --http 127.0.0.1:0 …`) and returns the process and
/// the URL it prints once it listens. Its stderr keeps being drained so it never blocks.
pub fn spawn_http_server(mut command: std::process::Command) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = std::io::BufReader::new(stderr).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("the server prints its address")
            .unwrap();
        if let Some(url) = line.split("serving MCP at ").nth(1) {
            break url.trim().to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (child, url)
}

/// Asserts that each configuration of `cases` stops `toolhost list` (with `tools` as the
/// tool file) with an error containing its expected text.
pub fn assert_configs_refused<'a>(
    tools: &str,
    cases: impl IntoIterator<Item = (&'a str, &'a str)>,
) {
    for (toml, expected) in cases {
        let fx = Fixture::new();
        fx.tool("tools.lua", tools);
        fx.write("toolhost.toml", toml);
        let output = fx.toolhost().arg("list").output().unwrap();
        assert!(!output.status.success(), "{toml}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{toml}\n{stderr}");
    }
}

/// Waits (polling: the event is another process's) until `done`, at most `limit`.
pub fn wait_until(limit: std::time::Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    done()
}
