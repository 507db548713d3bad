//! The MCP server handler, the same for both transports:
//!
//! - `tools/list` returns exactly the `mcp`-format definitions of the selection (docs/calls.md),
//!   with `outputSchema` and `annotations` where tools declare them;
//! - `tools/call` runs the whole pipeline (see [`content`] for how results map);
//!   `notifications/cancelled` stops the call, which answers `cancelled`;
//! - `ctx.progress` becomes `notifications/progress` when the request carried a
//!   `progressToken`, `log.*` during a call becomes `notifications/message` at or above
//!   the session's `logging/setLevel` level (default `warning`) — see [`observer`];
//! - a client declaring `roots` narrows the session's `fs` roots to them, never widening
//!   what the server allows ([`roots`]);
//! - every reload that changes the session's tool list sends
//!   `notifications/tools/list_changed`;
//! - calls are admitted through the shared [`gate::CallGate`] (limits, drain at shutdown).

// Logging and roots are deprecated by SEP-2577 from protocol 2026-07-28 on; the clients of
// today negotiate earlier versions, where they are part of the protocol.
#![allow(deprecated)]

mod content;
pub(crate) mod gate;
pub(crate) mod guard;
#[cfg(feature = "http")]
pub(crate) mod http;
mod observer;
mod roots;
#[cfg(feature = "cli")]
pub(crate) mod stdio;
mod tasks;

use crate::{CallContext, Definitions, Format, Host, LogLevel, Selection};
use content::to_call_result;
use gate::CallGate;
use observer::CallReports;
pub(crate) use observer::Sink;
use parking_lot::Mutex;
use rmcp::ErrorData as McpError;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    GetTaskParams, GetTaskResult, Implementation, InitializeRequestParams, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, RequestId, ServerCapabilities,
    ServerConfig, SetLevelRequestParams, Tool, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::{Peer, RoleServer as Role};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;

/// Default `[serve] drain_ms`.
pub(crate) const DEFAULT_DRAIN_MS: u64 = 10_000;

/// The log level of a session that never sent `logging/setLevel`.
const DEFAULT_LOG_LEVEL: LogLevel = LogLevel::Warning;

/// What every session of one server shares.
pub(crate) struct Shared {
    /// The host serving the tools.
    pub(crate) host: Host,
    /// The tools offered (format forced to `mcp`).
    selection: Selection,
    /// Call admission and drain.
    pub(crate) gate: CallGate,
    /// How long shutdown lets running calls finish.
    pub(crate) drain_period: Duration,
    /// The last definitions listed and their MCP form: the memoised definitions come back
    /// as the same `Arc` while nothing changed, so `tools/list` converts them only once.
    listed: Mutex<Option<(Definitions, Vec<Tool>)>>,
    /// The Tasks extension's tasks (records in the store, the ones running here).
    tasks: tasks::TaskService,
}

impl Shared {
    /// The shared state of a server offering `selection` of `host`'s tools.
    pub(crate) fn new(host: Host, selection: Selection) -> Arc<Self> {
        let config = host.config();
        let serve = &config.config.serve;
        let gate = CallGate::new(
            serve.max_calls.unwrap_or(gate::DEFAULT_MAX_CALLS),
            serve
                .max_session_calls
                .unwrap_or(gate::DEFAULT_MAX_SESSION_CALLS),
            serve
                .max_queued_calls
                .unwrap_or(gate::DEFAULT_MAX_QUEUED_CALLS),
        );
        let drain_period = Duration::from_millis(serve.drain_ms.unwrap_or(DEFAULT_DRAIN_MS));
        drop(config);
        let tasks = tasks::TaskService::new(&host);
        Arc::new(Self {
            host,
            selection: Selection {
                format: Format::Mcp,
                ..selection
            },
            gate,
            drain_period,
            listed: Mutex::new(None),
            tasks,
        })
    }

    /// The definitions this server lists (they may run `check_fn` probes: call it off the
    /// async workers).
    fn definitions(&self) -> Definitions {
        self.host.tool_definitions(&self.selection)
    }

    /// What this session lists, as registered: compared across reloads (no probe runs).
    fn static_listing(&self) -> Vec<serde_json::Value> {
        self.host.static_definitions(&self.selection)
    }
}

/// The client's request id (raw JSON text) behind an internal one: the stdio guard
/// renumbers requests before rmcp sees them (a call's `ctx.tool_call_id` is the id the
/// client wrote).
pub(crate) type OriginalIds = Arc<dyn Fn(i64) -> Option<String> + Send + Sync>;

/// One client's session.
struct Session {
    /// `logging/setLevel`'s level (`None`: never set).
    log_level: Mutex<Option<LogLevel>>,
    roots: roots::SessionRoots,
    slots: Arc<Semaphore>,
    /// Sends `tools/list_changed`; stopped with the session.
    notifier: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The client's request ids behind the guard's internal ones (stdio).
    ids: Option<OriginalIds>,
    /// Whether `initialize` negotiated a protocol older than 2026-07-28 (the session model,
    /// where a call's answer has no `resultType` and nothing rides in each request's
    /// `_meta`).
    legacy_protocol: AtomicBool,
    /// Whether plain calls may be answered by the stdio guard itself: a legacy session
    /// after rmcp has seen its `notifications/initialized`.
    direct_calls: AtomicBool,
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(notifier) = self.notifier.lock().take() {
            notifier.abort();
        }
    }
}

/// Serves one MCP session.
#[derive(Clone)]
pub(crate) struct McpServer {
    shared: Arc<Shared>,
    session: Arc<Session>,
}

impl McpServer {
    /// A new session of the server `shared`; `ids` maps the guard's request ids back to the
    /// client's (stdio).
    pub(crate) fn new(shared: Arc<Shared>, ids: Option<OriginalIds>) -> Self {
        let slots = shared.gate.session_slots();
        Self {
            shared,
            session: Arc::new(Session {
                log_level: Mutex::new(None),
                roots: roots::SessionRoots::default(),
                slots,
                notifier: Mutex::new(None),
                ids,
                legacy_protocol: AtomicBool::new(false),
                direct_calls: AtomicBool::new(false),
            }),
        }
    }

    /// The most calls of this session that can be running or queued at once.
    pub(crate) fn session_capacity(&self) -> usize {
        self.shared.gate.session_capacity()
    }

    /// Whether the stdio guard may answer a plain `tools/call` of this session itself: the
    /// handshake is complete and the protocol is one whose answers it writes as rmcp does.
    pub(crate) fn takes_direct_calls(&self) -> bool {
        self.session.direct_calls.load(Ordering::Acquire)
    }

    fn context(&self) -> CallContext {
        let selection = &self.shared.selection;
        let mut ctx = CallContext {
            scope: selection.scope.clone(),
            toolsets: selection.toolsets.clone(),
            ..CallContext::default()
        };
        ctx.cancel = self.shared.gate.call_token();
        ctx
    }

    /// The MCP `Tool` list of the selection.
    fn tools(&self) -> Vec<Tool> {
        let definitions = self.shared.definitions();
        let mut listed = self.shared.listed.lock();
        match &*listed {
            Some((known, tools)) if Arc::ptr_eq(known, &definitions) => tools.clone(),
            _ => {
                let tools = to_tools(&definitions);
                *listed = Some((definitions, tools.clone()));
                tools
            }
        }
    }

    /// The request id as the client wrote it, as JSON text (`7`, `"abc"`).
    fn call_id(&self, id: &RequestId) -> String {
        let text = serde_json::to_string(id).unwrap_or_default();
        match (&self.session.ids, id) {
            (Some(ids), RequestId::Number(internal)) => ids(*internal).unwrap_or(text),
            _ => text,
        }
    }

    /// Starts sending `tools/list_changed` to `peer` whenever a reload changes the tools
    /// this session lists.
    fn start_notifier(&self, peer: Peer<Role>) {
        let shared = self.shared.clone();
        let mut reloads = shared.host.reload_events();
        let task = tokio::spawn(async move {
            // Compared as registered, not as available: a reload must never queue behind
            // a `check_fn` (clients list again, and probe then).
            let listed = {
                let shared = shared.clone();
                tokio::task::spawn_blocking(move || shared.static_listing()).await
            };
            let Ok(mut listed) = listed else { return };
            loop {
                match reloads.recv().await {
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                }
                let now = {
                    let shared = shared.clone();
                    tokio::task::spawn_blocking(move || shared.static_listing()).await
                };
                let Ok(now) = now else { break };
                // A reload that only reported an error, or touched files without changing
                // what this session lists, is not news to the client.
                if now[..] == listed[..] {
                    continue;
                }
                listed = now;
                if let Err(e) = peer.notify_tool_list_changed().await {
                    tracing::debug!("cannot send tools/list_changed: {e}");
                    break;
                }
            }
        });
        if let Some(previous) = self.session.notifier.lock().replace(task) {
            previous.abort();
        }
    }
}

/// Definitions as MCP tools (a definition rmcp cannot read is left out, with a warning).
fn to_tools(definitions: &Definitions) -> Vec<Tool> {
    definitions
        .iter()
        .filter_map(
            |definition| match serde_json::from_value::<Tool>((**definition).clone()) {
                Ok(tool) => Some(tool),
                Err(e) => {
                    tracing::warn!("definition cannot be offered over MCP: {e}: {definition}");
                    None
                }
            },
        )
        .collect()
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = Implementation::from_build_env();
        info.name = "toolhost".into();
        info.version = env!("CARGO_PKG_VERSION").into();
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_logging()
                .enable_tasks()
                .build(),
        )
        .with_server_info(info)
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        if request.capabilities.roots.is_some() {
            self.session.roots.expect_client_roots();
        }
        context.peer.set_peer_info(request.clone());
        let negotiated = self.negotiate_initialize(&request)?;
        // ISO dates compare as text, as rmcp compares them.
        let legacy = negotiated.protocol_version.as_str() < ProtocolVersion::V_2026_07_28.as_str();
        self.session
            .legacy_protocol
            .store(legacy, Ordering::Release);
        Ok(negotiated)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let legacy = self.session.legacy_protocol.load(Ordering::Acquire);
        self.session.direct_calls.store(legacy, Ordering::Release);
        self.start_notifier(context.peer.clone());
        if self.session.roots.uses_client_roots() {
            self.session.roots.refresh(&context.peer).await;
        }
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        if self.session.roots.uses_client_roots() {
            self.session.roots.refresh(&context.peer).await;
        }
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        *self.session.log_level.lock() = Some(observer::minimum_level(request.level));
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        // Definitions may run `check_fn` probes (Lua): never on an async worker.
        let server = self.clone();
        let tools = tokio::task::spawn_blocking(move || server.tools())
            .await
            .map_err(|e| McpError::internal_error(format!("listing tools failed: {e}"), None))?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let call = Call {
            tool_call_id: self.call_id(&context.id),
            progress_token: context.meta.get_progress_token(),
            name: request.name.into_owned(),
            arguments: request.arguments,
        };
        // A `task` tool: a task for a client of the Tasks extension (docs/mcp-server.md#tasks).
        if let Some((support, budget)) = self.shared.host.task_tool(&call.name, &self.context()) {
            let declared = context
                .client_capabilities()
                .is_some_and(|caps| caps.supports_tasks());
            if declared {
                let principal = tasks::principal::of(&context);
                return self
                    .call_as_task(call, budget, principal, context.ct.clone())
                    .await;
            }
            if support == crate::TaskSupport::Required {
                return Err(McpError::missing_required_client_capability(
                    ClientCapabilities::builder().enable_tasks().build(),
                ));
            }
        }
        // `notifications/cancelled` cancels rmcp's token for this request.
        let cancelled = context.ct.cancelled_owned();
        self.run_call(call, Sink::Peer(context.peer.clone()), cancelled)
            .await
            .map(Into::into)
            .map_err(|refused| McpError::internal_error(refused.to_string(), None))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let principal = tasks::principal::of(&context);
        self.shared.tasks.get(request.task_id, principal).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let principal = tasks::principal::of(&context);
        self.shared
            .tasks
            .update(request.task_id, request.input_responses, principal)
            .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let principal = tasks::principal::of(&context);
        self.shared.tasks.cancel(request.task_id, principal).await
    }
}

/// One `tools/call` of a session, however it arrived (through rmcp, or answered by the
/// stdio guard itself).
pub(crate) struct Call {
    /// The tool's name.
    pub(crate) name: String,
    /// The call's arguments (`None`: none given).
    pub(crate) arguments: Option<serde_json::Map<String, Value>>,
    /// The request id as the client wrote it (JSON text): the call's `ctx.tool_call_id`.
    pub(crate) tool_call_id: String,
    /// The request's `_meta.progressToken`, when it asked for progress.
    pub(crate) progress_token: Option<rmcp::model::ProgressToken>,
}

impl McpServer {
    /// Runs `call` through the whole pipeline once the gate admits it; its progress and
    /// log lines go to `sink`, and `cancelled` resolving stops it (it then answers
    /// `cancelled`). `Err` is the gate's refusal.
    pub(crate) async fn run_call(
        &self,
        call: Call,
        sink: Sink,
        cancelled: impl std::future::Future<Output = ()>,
    ) -> Result<CallToolResult, gate::Refused> {
        let _admitted = self.shared.gate.admit(&self.session.slots).await?;
        let args = call.arguments.map(Value::Object).unwrap_or_default();
        let mut ctx = self.context();
        ctx.tool_call_id = Some(call.tool_call_id);
        if let Some(roots) = self.session.roots.current().await {
            ctx = ctx.with_fs_roots(roots);
        }
        let log_level = self.session.log_level.lock().unwrap_or(DEFAULT_LOG_LEVEL);
        let reports = CallReports::start(sink, call.progress_token, Some(log_level));
        if let Some(reports) = &reports {
            ctx = ctx.with_observer(reports.observer());
        }
        // Cancelling the request cancels the call's own token: the host stops the call and
        // answers `cancelled`.
        let cancel = ctx.cancel.clone();
        let host = &self.shared.host;
        let outcome = {
            let running = host.handle_call(&call.name, args, &ctx);
            tokio::pin!(running);
            tokio::pin!(cancelled);
            tokio::select! {
                result = &mut running => result,
                () = &mut cancelled => {
                    cancel.cancel();
                    running.await
                }
            }
        };
        // The observer in `ctx` must go before the reports can finish.
        drop(ctx);
        if let Some(reports) = reports {
            reports.finish().await;
        }
        Ok(to_call_result(outcome.result, outcome.structured))
    }
}
