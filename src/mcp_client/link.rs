//! One external server's link: its supervisor task connects, lists the tools, relists on
//! `notifications/tools/list_changed`, notices the server going away and reconnects with
//! exponential back-off (1 s doubling to 60 s). Every change of what the server offers
//! (its tools, or whether it is up) is reported through `on_change`, and the host turns it
//! into a registry update.

use super::connect::{Session, Wiring, connect};
use super::error::Unreachable;
use super::listener::Listener;
use super::listing::{self, Limits, ListError};
use super::relay::{Caller, Relays};
use super::request::SentCall;
use super::result::{ResultShape, from_call_result};
use super::screen;
use super::stdio::{Notes, max_message_bytes};
use crate::config::McpServerConfig;
use parking_lot::Mutex;
use rmcp::Peer;
use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, Tool};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// Default time starting a server (spawn, handshake, first listing) may take.
pub(super) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// First wait before reconnecting.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// Longest wait before reconnecting.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Shortest gap between two listings after `tools/list_changed`: a server that says its
/// tools changed over and over is listed at this pace (what it says in between is one
/// change), not as fast as it can answer.
const MIN_RELIST_GAP: Duration = Duration::from_millis(500);

/// Whether the server is serving.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Status {
    /// The first connection attempt has not finished.
    Starting,
    /// Connected; its tools are callable.
    Up,
    /// Not connected, and why (`MCP server 'git' failed to start: …`).
    Down(String),
}

impl Status {
    /// Why the server's tools are unavailable, or `None` when it is up.
    pub(crate) fn reason(&self, server: &str) -> Option<String> {
        match self {
            Status::Up => None,
            Status::Starting => Some(format!("MCP server '{server}' is starting")),
            Status::Down(reason) => Some(reason.clone()),
        }
    }
}

/// What the link knows now.
struct Known {
    status: Status,
    peer: Option<Peer<RoleClient>>,
    /// The server's tools as last listed (kept while it is down, so they stay registered).
    tools: Option<Arc<Vec<Tool>>>,
    /// Why tools of the last listing were left out (`tool 'x' left out: …`).
    left_out: Vec<String>,
}

/// One listing's outcome.
pub(super) struct Listing {
    tools: Vec<Tool>,
    left_out: Vec<String>,
}

/// One configured server and its state.
pub(crate) struct Link {
    /// `[mcp_servers.NAME]`.
    pub name: String,
    /// Its section.
    pub config: McpServerConfig,
    known: Mutex<Known>,
    /// Set once the first connection attempt has ended, either way.
    settled: watch::Sender<bool>,
    /// The child's process group, while one runs.
    pub(super) pgid: Mutex<Option<u32>>,
    /// Stops the supervisor (config removed or changed, host gone).
    stop: CancellationToken,
    /// Calls whose progress and log notifications go back to their callers.
    relays: Arc<Relays>,
    /// The client runtime the supervisor (and rmcp's session) runs on, once it runs.
    runtime: std::sync::OnceLock<tokio::runtime::Handle>,
}

impl Link {
    /// A link that has not connected yet; `tools` are the last listing remembered from an
    /// earlier run, if any.
    pub(super) fn new(name: &str, config: McpServerConfig, tools: Option<Vec<Tool>>) -> Self {
        Self {
            name: name.to_string(),
            config,
            known: Mutex::new(Known {
                status: Status::Starting,
                peer: None,
                tools: tools.map(Arc::new),
                left_out: Vec::new(),
            }),
            settled: watch::channel(false).0,
            pgid: Mutex::new(None),
            stop: CancellationToken::new(),
            relays: Arc::default(),
            runtime: std::sync::OnceLock::new(),
        }
    }

    /// Whether it is up, and if not why.
    pub(crate) fn status(&self) -> Status {
        self.known.lock().status.clone()
    }

    /// The tools as last listed.
    pub(crate) fn tools(&self) -> Option<Arc<Vec<Tool>>> {
        self.known.lock().tools.clone()
    }

    /// Why tools of the last listing were left out, one reason each.
    pub(crate) fn left_out(&self) -> Vec<String> {
        self.known.lock().left_out.clone()
    }

    /// Waits until the first connection attempt has ended.
    pub(super) async fn settled(&self) {
        let mut settled = self.settled.subscribe();
        let _ = settled.wait_for(|done| *done).await;
    }

    /// Stops the supervisor (its session ends, a child is killed). Returns the killed
    /// child's pid (= its group's id), for [`super::reap::reap`].
    pub(super) fn stop(&self) -> Option<i32> {
        self.stop.cancel();
        self.kill_group()
    }

    /// Kills the child's whole process group, if one runs (a server that spawned helpers
    /// takes them with it); returns its pid (= the group's id).
    pub(super) fn kill_group(&self) -> Option<i32> {
        let pgid = self.pgid.lock().take()?;
        let pgid = i32::try_from(pgid).ok().filter(|pgid| *pgid > 1)?;
        // SAFETY: killpg only sends a signal; a group that is gone yields ESRCH.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
        Some(pgid)
    }

    /// How long starting may take.
    pub(super) fn connect_timeout(&self) -> Duration {
        self.config
            .connect_timeout_ms
            .map(Duration::from_millis)
            .unwrap_or(DEFAULT_CONNECT_TIMEOUT)
    }

    /// Calls `tool` on the server. Dropping the future before the answer sends
    /// `notifications/cancelled` for the request (rmcp does it), which is how a deadline
    /// or a cancellation of ours reaches the server. The server's progress and log
    /// notifications and elicitation requests during it go to `caller`, as the tool
    /// `registered`'s.
    pub(crate) async fn call(
        &self,
        tool: &str,
        args: Value,
        shape: ResultShape,
        caller: Caller,
        registered: &str,
    ) -> Result<Value, Unreachable> {
        let (peer, status) = {
            let known = self.known.lock();
            (known.peer.clone(), known.status.clone())
        };
        let Some(peer) = peer else {
            return Err(match status {
                Status::Down(reason) => Unreachable::Down(reason),
                _ => Unreachable::NotConnected(self.name.clone()),
            });
        };
        let arguments = match args {
            Value::Object(arguments) => arguments,
            Value::Null => serde_json::Map::new(),
            other => {
                return Err(Unreachable::NotAnObject(crate::json_type::json_type(
                    &other,
                )));
            }
        };
        let mut request = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let span = super::trace::client_span(&self.name, tool);
        super::trace::inject(&span, &mut request);
        let answer = self
            .call_traced(&peer, request, caller, registered, shape)
            .instrument(span.clone())
            .await;
        if answer.is_err() {
            super::trace::failed(&span, "unreachable");
        }
        answer
    }

    /// [`call`](Self::call) of the prepared `request`, inside its span.
    async fn call_traced(
        &self,
        peer: &Peer<RoleClient>,
        request: CallToolRequestParams,
        caller: Caller,
        registered: &str,
        shape: ResultShape,
    ) -> Result<Value, Unreachable> {
        let unreachable = |source| Unreachable::Call {
            server: self.name.clone(),
            source: Box::new(source),
        };
        // Noted before the request goes out and held until the answer: the relay ends with
        // the call. The server may ask or log as soon as the request reaches it, before
        // this task runs again (under load it did, and its question was answered `cancel`).
        let mut relayed = self.relays.register_unsent(caller, registered);
        let sent = SentCall::send(peer, request).await.map_err(unreachable)?;
        relayed.sent_as(sent.progress_token());
        let result = sent.answer().await.map_err(unreachable)?;
        // rmcp hands each notification to the listener in a task of its own on the client
        // runtime, spawned before it passes on the answer that followed it, while this call
        // may run on another runtime. A task spawned there now resumes from its yield only
        // once the worker has run the tasks already queued (deferred wakes wait for them),
        // so what the server reported before answering is relayed before the relay ends.
        if let Some(runtime) = self.runtime.get() {
            let _ = runtime.spawn(tokio::task::yield_now()).await;
        }
        tokio::task::yield_now().await;
        drop(relayed);
        from_call_result(result, shape)
    }

    fn set(&self, status: Status, peer: Option<Peer<RoleClient>>, listing: Option<Listing>) {
        // Starting counts as down: no call reaches the server yet.
        crate::telemetry::metric::mcp_server_up(&self.name, matches!(status, Status::Up));
        let mut known = self.known.lock();
        known.status = status;
        known.peer = peer;
        if let Some(listing) = listing {
            known.tools = Some(Arc::new(listing.tools));
            known.left_out = listing.left_out;
        }
    }

    /// The supervisor: connect, serve, notice the end, back off, again, until stopped.
    /// `on_change` runs after every change of status or tools.
    pub(super) async fn supervise(self: Arc<Self>, on_change: Arc<dyn Fn(&Link) + Send + Sync>) {
        let _ = self.runtime.set(tokio::runtime::Handle::current());
        let mut backoff = FIRST_BACKOFF;
        loop {
            let started = tokio::time::Instant::now();
            let tools_changed = Arc::new(Notify::new());
            let listener = Listener {
                tools_changed: tools_changed.clone(),
                server: Arc::from(self.name.as_str()),
                relays: self.relays.clone(),
            };
            let notes = Arc::new(Notes::default());
            let attempt = tokio::select! {
                () = self.stop.cancelled() => return,
                attempt = tokio::time::timeout(self.connect_timeout(), self.start(listener, &notes)) => attempt,
            };
            match attempt {
                Ok(Ok((session, listing))) => {
                    tracing::debug!(target: "toolhost::mcp_client", server = %self.name, "connected, {} tools", listing.tools.len());
                    self.set(Status::Up, Some(session.peer().clone()), Some(listing));
                    self.settled.send_replace(true);
                    on_change(&self);
                    let reason = self.serve(session, tools_changed, &notes, &on_change).await;
                    let Some(reason) = reason else { return };
                    tracing::warn!(target: "toolhost::mcp_client", "{reason}");
                    self.set(Status::Down(reason), None, None);
                    on_change(&self);
                    if started.elapsed() >= MAX_BACKOFF {
                        backoff = FIRST_BACKOFF;
                    }
                }
                Ok(Err(error)) => self.failed(error, &on_change),
                Err(_) => self.failed(
                    Unreachable::Timeout(self.connect_timeout().as_millis()),
                    &on_change,
                ),
            }
            self.kill_group();
            tokio::select! {
                () = self.stop.cancelled() => return,
                () = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    fn failed(&self, error: Unreachable, on_change: &Arc<dyn Fn(&Link) + Send + Sync>) {
        let reason = format!("MCP server '{}' failed to start: {error}", self.name);
        let changed = self.status() != Status::Down(reason.clone());
        // Said once; the same failure on every retry only at debug.
        match changed {
            true => tracing::warn!(target: "toolhost::mcp_client", "{reason}"),
            false => tracing::debug!(target: "toolhost::mcp_client", "{reason}"),
        }
        self.set(Status::Down(reason), None, None);
        self.settled.send_replace(true);
        if changed {
            on_change(self);
        }
    }

    /// Takes a listing made after `tools/list_changed`; one that did not change is not
    /// news (the host's registry and its clients are left alone).
    fn relisted(
        &self,
        peer: &Peer<RoleClient>,
        listing: Listing,
        on_change: &Arc<dyn Fn(&Link) + Send + Sync>,
    ) {
        let unchanged = {
            let known = self.known.lock();
            known.left_out == listing.left_out
                && known
                    .tools
                    .as_deref()
                    .is_some_and(|known| *known == listing.tools)
        };
        if unchanged {
            tracing::debug!(target: "toolhost::mcp_client", server = %self.name, "tool list announced as changed, but the same");
            return;
        }
        tracing::info!(target: "toolhost::mcp_client", server = %self.name, "tool list changed, {} tools", listing.tools.len());
        self.set(Status::Up, Some(peer.clone()), Some(listing));
        on_change(self);
    }

    /// The limits of one listing.
    fn limits(&self) -> Limits {
        Limits::of(&self.config)
    }

    /// Connects and lists the tools.
    async fn start(
        &self,
        listener: Listener,
        notes: &Arc<Notes>,
    ) -> Result<(Session, Listing), Unreachable> {
        let wiring = Wiring {
            pgid: &self.pgid,
            notes: notes.clone(),
            max_message: max_message_bytes(
                self.config
                    .max_list_bytes
                    .unwrap_or(listing::DEFAULT_MAX_LIST_BYTES),
            ),
        };
        // A message over the size limit ends the session: that is the reason then.
        let session = connect(&self.name, &self.config, listener, wiring)
            .await
            .map_err(|e| notes.fatal().map_or(e, Unreachable::Down))?;
        let listed = listing::list(session.peer(), self.limits()).await;
        let listing = self
            .listed(listed, notes)
            .map_err(|e| Unreachable::Down(e.into_reason()))?;
        Ok((session, listing))
    }

    /// A listing's outcome, with the tools left out and the transport's reason (if it
    /// ended the session) taken into account.
    fn listed(
        &self,
        listed: Result<Vec<Tool>, ListError>,
        notes: &Notes,
    ) -> Result<Listing, ListError> {
        let mut left_out = notes.take_left_out();
        match listed {
            Ok(tools) => {
                // Screened already over stdio; over HTTP rmcp parsed them whole.
                let tools = tools
                    .into_iter()
                    .filter(|tool| match screen::too_deep(tool) {
                        None => true,
                        Some(reason) => {
                            left_out.push(reason);
                            false
                        }
                    })
                    .collect();
                Ok(Listing { tools, left_out })
            }
            Err(error) => match notes.fatal() {
                Some(fatal) => Err(ListError::Limit(fatal)),
                None => Err(error),
            },
        }
    }

    /// Serves until the session ends (`Some(reason)`) or the link is stopped (`None`);
    /// lists again whenever the server says its tools changed.
    async fn serve(
        &self,
        session: Session,
        tools_changed: Arc<Notify>,
        notes: &Notes,
        on_change: &Arc<dyn Fn(&Link) + Send + Sync>,
    ) -> Option<String> {
        let peer = session.peer().clone();
        let ending = session.cancellation_token();
        let mut waiting = Box::pin(session.waiting());
        // A change was announced and is not listed yet; the next listing may start then.
        let mut announced = false;
        let mut next_listing = tokio::time::Instant::now();
        loop {
            tokio::select! {
                () = self.stop.cancelled() => {
                    ending.cancel();
                    let _ = tokio::time::timeout(Duration::from_secs(2), waiting).await;
                    return None;
                }
                () = tools_changed.notified(), if !announced => announced = true,
                () = tokio::time::sleep_until(next_listing), if announced => {
                    announced = false;
                    let listed = listing::list(&peer, self.limits()).await;
                    next_listing = tokio::time::Instant::now() + MIN_RELIST_GAP;
                    match self.listed(listed, notes) {
                        Ok(listing) => self.relisted(&peer, listing, on_change),
                        // Over a limit: the server is down with the reason (and restarted).
                        Err(ListError::Limit(reason)) => {
                            ending.cancel();
                            let _ = tokio::time::timeout(Duration::from_secs(2), &mut waiting).await;
                            return Some(format!(
                                "MCP server '{}' is down: {reason}; restarting with back-off",
                                self.name
                            ));
                        }
                        Err(ListError::Failed(error)) => tracing::warn!(target: "toolhost::mcp_client", server = %self.name, "tools/list after list_changed failed: {error}"),
                    }
                }
                ended = &mut waiting => {
                    if let Some(fatal) = notes.fatal() {
                        return Some(format!(
                            "MCP server '{}' is down: {fatal}; restarting with back-off",
                            self.name
                        ));
                    }
                    let how = match ended {
                        Ok(reason) => format!("{reason:?}"),
                        Err(error) => error.to_string(),
                    };
                    return Some(format!(
                        "MCP server '{}' exited ({how}); restarting with back-off",
                        self.name
                    ));
                }
            }
        }
    }
}
