//! Starting the connection to one server: a stdio child in its own process group (killed
//! with the host, never orphaned) or a streamable-HTTP endpoint. Everything protocol-level
//! is rmcp's.

use super::error::Unreachable;
use super::listener::Listener;
use super::stdio::{ChildTransport, Notes};
use crate::config::McpServerConfig;
use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::RoleClient;
use rmcp::service::{RunningService, ServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use std::process::Stdio;
use std::sync::Arc;
use tokio::io::AsyncBufReadExt;

/// A running client session with one server.
pub(super) type Session = RunningService<RoleClient, Listener>;

/// Variables a stdio child keeps from the host's environment (a clean environment
/// otherwise: secrets in the host's environment are not every server's business).
const INHERITED_ENV: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER"];

/// Longest stderr line logged (a server printing binary junk cannot flood the log).
const MAX_STDERR_LINE: usize = 4096;

/// How one connection is made and read.
pub(super) struct Wiring<'a> {
    /// The child's process-group id goes here as soon as it exists (so the host can kill
    /// the group whatever happens next).
    pub pgid: &'a parking_lot::Mutex<Option<u32>>,
    /// What a stdio transport notes beside the messages.
    pub notes: Arc<Notes>,
    /// The longest message the server may send.
    pub max_message: usize,
}

/// Connects to `server` and runs the MCP handshake.
pub(super) async fn connect(
    name: &str,
    server: &McpServerConfig,
    listener: Listener,
    wiring: Wiring<'_>,
) -> Result<Session, Unreachable> {
    match (&server.command, &server.url) {
        (Some(command), _) => connect_child(name, server, command, listener, wiring).await,
        (None, Some(url)) => connect_http(server, url, listener, wiring).await,
        (None, None) => Err(Unreachable::NoTransport),
    }
}

async fn connect_child(
    name: &str,
    server: &McpServerConfig,
    command: &[String],
    listener: Listener,
    wiring: Wiring<'_>,
) -> Result<Session, Unreachable> {
    let Some((program, args)) = command.split_first() else {
        return Err(Unreachable::EmptyCommand);
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args).env_clear();
    for key in INHERITED_ENV {
        if let Some(value) = std::env::var_os(key) {
            cmd.env(key, value);
        }
    }
    cmd.envs(&server.env);
    if let Some(cwd) = &server.cwd {
        cmd.current_dir(cwd);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    die_with_parent(&mut cmd);
    let mut wrapped = CommandWrap::from(cmd);
    wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
    let spawn_failed = |source| Unreachable::Spawn {
        program: program.clone(),
        source,
    };
    let mut child = wrapped.spawn().map_err(spawn_failed)?;
    *wiring.pgid.lock() = child.id();
    if let Some(stderr) = child.stderr().take() {
        tokio::spawn(log_stderr(name.to_string(), stderr));
    }
    let transport =
        ChildTransport::new(name, child, wiring.max_message, wiring.notes).map_err(spawn_failed)?;
    listener
        .serve(transport)
        .await
        .map_err(|e| Unreachable::Handshake(Box::new(e)))
}

async fn connect_http(
    server: &McpServerConfig,
    url: &str,
    listener: Listener,
    wiring: Wiring<'_>,
) -> Result<Session, Unreachable> {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    // rmcp reads at most this much of one answer (checked while reading).
    config.max_sse_event_size = wiring.max_message;
    config.max_json_response_size = wiring.max_message;
    if let Some(var) = &server.bearer_token_env {
        match std::env::var(var) {
            Ok(token) if !token.is_empty() => config = config.auth_header(token),
            _ => {
                return Err(Unreachable::NoBearerToken(var.clone()));
            }
        }
    }
    // reqwest is built without a crypto provider of its own: ring, installed once per
    // process (an embedder that installed another one keeps it).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = super::http::ScreeningClient::new(wiring.notes)?;
    let transport = StreamableHttpClientTransport::with_client(client, config);
    let detail = |e: rmcp::service::ClientInitializeError| match &e {
        // Its `error` is not marked as the source: follow it by hand to the cause
        // (a refused connection, an untrusted certificate).
        rmcp::service::ClientInitializeError::TransportError { error, .. } => {
            use rmcp::transport::streamable_http_client::StreamableHttpError;
            match error
                .error
                .downcast_ref::<StreamableHttpError<reqwest::Error>>()
            {
                // Nor is the HTTP client's error inside it.
                Some(StreamableHttpError::Client(client)) => with_causes(client),
                _ => with_causes(error),
            }
        }
        other => with_causes(other),
    };
    listener
        .serve(transport)
        .await
        .map_err(|e| Unreachable::Connect {
            url: url.to_string(),
            detail: detail(e),
        })
}

/// An error and its causes, innermost last (`…: invalid peer certificate: UnknownIssuer`):
/// the top-level message of a transport error rarely says what went wrong.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        let message = inner.to_string();
        if !text.contains(&message) {
            text.push_str(": ");
            text.push_str(&message);
        }
        cause = inner.source();
    }
    text
}

/// The server's stderr, line by line, into our log at debug under its name.
async fn log_stderr(name: String, stderr: tokio::process::ChildStderr) {
    let mut lines = tokio::io::BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match lines.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line[..line.len().min(MAX_STDERR_LINE)]);
                tracing::debug!(target: "toolhost::mcp_client", server = %name, "{}", text.trim_end());
            }
        }
    }
}

/// Asks the kernel to kill the child when the host dies, however it dies (SIGKILL
/// included): the group kill on drop covers orderly exits, this covers the rest.
fn die_with_parent(cmd: &mut tokio::process::Command) {
    // SAFETY: the closure runs in the forked child before exec and calls only
    // async-signal-safe functions (prctl, getppid, _exit); it touches no memory of ours.
    unsafe {
        let parent = libc::getpid();
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // The host died between fork and prctl: go at once.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}
