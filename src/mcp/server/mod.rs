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
//!   `notifications/tools/list_changed` (2025-11-25), or reaches every open
//!   `subscriptions/listen` (2026-07-28, [`subscriptions`]);
//! - each request's declared client (protocol, capabilities, log level) is one
//!   [`RequestPeer`], from the session (2025-11-25) or the request's `_meta` (2026-07-28);
//! - on 2026-07-28, `tools/list` carries the caching hints `ttlMs` (`[serve] list_ttl_ms`)
//!   and `cacheScope`, and `server/discover`, `resultType` and the `_meta` checks are
//!   rmcp's;
//! - calls are admitted through the shared [`gate::CallGate`] (limits, drain at shutdown);
//! - a tool's input requests (`ctx.ask`, `ctx.roots`, `ctx.sample`) and the approval
//!   gate's question go to the client: awaited server→client requests on a 2025-11-25
//!   session, multi-round `input_required` results on 2026-07-28 ([`input`]); a tool whose
//!   `needs` the client did not declare answers -32021.

// Logging and roots are deprecated by SEP-2577 from protocol 2026-07-28 on; the clients of
// today negotiate earlier versions, where they are part of the protocol.
#![allow(deprecated)]

mod audit;
mod content;
pub(crate) mod gate;
pub(crate) mod guard;
mod header_schemas;
#[cfg(feature = "http")]
pub(crate) mod http;
pub(crate) mod input;
pub(crate) mod lines;
mod listing;
mod observer;
pub(crate) mod origin;
pub(crate) mod request_peer;
mod resources;
mod roots;
mod served;
#[cfg(feature = "cli")]
pub(crate) mod stdio;
mod subscriptions;
mod tasks;
mod trace;

use crate::{CallContext, Definitions, Format, Host, LogLevel, Selection};
use content::to_call_result;
use gate::CallGate;
use listing::ListingChanges;
use observer::CallReports;
pub(crate) use observer::Sink;
use parking_lot::Mutex;
pub(crate) use request_peer::RequestPeer;
use rmcp::ErrorData as McpError;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities,
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
    GetTaskParams, GetTaskResult, Implementation, InitializeRequestParams, InitializeResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    LoggingLevel, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, RequestId, ServerCapabilities, ServerConfig, SetLevelRequestParams,
    SubscriptionFilter, Tool, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{Peer, RoleServer as Role};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::Semaphore;

/// Checks that the audit log `[audit]` asks for can be written (`base`: the config file's
/// directory); the message names the path and the reason.
#[cfg(feature = "cli")]
pub(crate) fn audit_check(
    path: Option<&std::path::Path>,
    max_bytes: Option<u64>,
    base: Option<&std::path::Path>,
) -> Result<(), String> {
    let settings = audit::Settings {
        path,
        arguments: false,
        max_bytes,
    };
    audit::AuditLog::open(settings, base).map(drop)
}

/// Default `[serve] drain_ms`.
pub(crate) const DEFAULT_DRAIN_MS: u64 = 10_000;

/// The log level of a session that never sent `logging/setLevel`.
const DEFAULT_LOG_LEVEL: LogLevel = LogLevel::Warning;

/// The JSON-RPC error code of a `tools/call` refused because the caller's OAuth token lacks
/// the tool's scope (`[serve.oauth.scopes]`; the HTTP answer is 403 `insufficient_scope`).
pub(crate) const INSUFFICIENT_SCOPE: i32 = -32003;

/// Default `[serve] list_ttl_ms`: how long a 2026-07-28 client may reuse a `tools/list`
/// answer. Zero: a listing may change at any reload, and a subscription's
/// `tools/list_changed` cannot reach a client that does not listen, so only an answer
/// checked again each time is never stale (docs/mcp-server.md, caching hints).
pub(crate) const DEFAULT_LIST_TTL_MS: u64 = 0;

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
    /// The count of reloads that changed the listing (its watcher starts with the first
    /// session or subscription that needs it).
    listing: OnceLock<ListingChanges>,
    /// The input schemas of the tools whose parameters carry `x-mcp-header`, for rmcp's
    /// check of `Mcp-Param-*` headers.
    header_schemas: header_schemas::HeaderSchemas,
    /// `[serve] list_ttl_ms`.
    list_ttl_ms: u64,
    /// Seals and opens the state of multi-round calls (`[serve] state_key_env`).
    sealer: input::seal::Sealer,
    /// The Tasks extension's tasks (records in the store, the ones running here).
    tasks: tasks::TaskService,
    /// The audit log (`[audit]`), if there is one.
    audit: Option<Arc<audit::AuditLog>>,
    /// `[telemetry] record_arguments`.
    record_arguments: bool,
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
        let list_ttl_ms = serve.list_ttl_ms.unwrap_or(DEFAULT_LIST_TTL_MS);
        let sealer = input::seal::Sealer::from_config(
            serve.state_key_env.as_deref(),
            serve.input_request_ttl_ms,
        )
        .unwrap_or_else(|problem| {
            // `toolhost serve` refuses to start on this; an embedder gets a working server
            // whose multi-round calls only this process can continue.
            tracing::error!("{problem}; using a random key of this process");
            input::seal::Sealer::random(Duration::from_millis(
                serve
                    .input_request_ttl_ms
                    .unwrap_or(input::seal::DEFAULT_TTL_MS),
            ))
            .unwrap_or_else(|e| panic!("no random key for request states: {e}"))
        });
        let base = config.path.as_deref().and_then(std::path::Path::parent);
        let audit = &config.config.audit;
        let settings = audit::Settings {
            path: audit.path.as_deref(),
            arguments: audit.arguments,
            max_bytes: audit.max_bytes,
        };
        let audit = audit::AuditLog::open(settings, base)
            .unwrap_or_else(|problem| {
                // `toolhost serve` refuses to start on this; an embedder is told here.
                tracing::error!("{problem}; no audit log");
                None
            })
            .map(Arc::new);
        let record_arguments = config.config.telemetry.record_arguments;
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
            listing: OnceLock::new(),
            header_schemas: header_schemas::HeaderSchemas::default(),
            list_ttl_ms,
            sealer,
            tasks,
            audit,
            record_arguments,
        })
    }

    /// The listing changes so far, to wait for the next (starts the watcher the first
    /// time; call it inside the runtime).
    fn listing_changes(self: &Arc<Self>) -> ListingChanges {
        self.listing.get_or_init(|| listing::watch(self)).clone()
    }

    /// The definitions this server lists (they may run `check_fn` probes: call it off the
    /// async workers).
    fn definitions(&self) -> Definitions {
        self.host.tool_definitions(&self.selection)
    }

    /// The tools this server lists, as registered (no probe runs).
    fn static_listing(&self) -> Vec<serde_json::Value> {
        self.host.static_definitions(&self.selection)
    }

    /// What this server offers, as registered: compared across reloads (no probe and no
    /// Lua `list` runs).
    fn snapshot(&self) -> listing::Snapshot {
        listing::Snapshot {
            tools: self.static_listing(),
            resources: resources::listed_resources(self),
            prompts: resources::listed_prompts(self),
            versions: self.host.resource_versions(),
        }
    }

    /// A context with this server's selection (which tools, resources and prompts it
    /// serves).
    fn selection_context(&self) -> CallContext {
        self.selection_context_cancelled_by(tokio_util::sync::CancellationToken::new())
    }

    /// [`selection_context`](Self::selection_context) cancelled by `cancel`.
    fn selection_context_cancelled_by(
        &self,
        cancel: tokio_util::sync::CancellationToken,
    ) -> CallContext {
        let mut ctx = CallContext::cancelled_by(cancel);
        ctx.scope = self.selection.scope.clone();
        ctx.toolsets = self.selection.toolsets.clone();
        ctx
    }
}

/// The client's request id (raw JSON text) behind an internal one: the stdio guard
/// renumbers requests before rmcp sees them (a call's `ctx.tool_call_id` is the id the
/// client wrote).
pub(crate) type OriginalIds = Arc<dyn Fn(i64) -> Option<String> + Send + Sync>;

/// One client's session.
struct Session {
    /// Counts the session as open (`mcp.server.sessions`) while it lives.
    _open: crate::telemetry::metric::OpenSession,
    /// `logging/setLevel`'s level (`None`: never set).
    log_level: Mutex<Option<LoggingLevel>>,
    /// What `initialize` declared (`None`: no `initialize`, a 2026-07-28 connection).
    declared: Mutex<Option<RequestPeer>>,
    /// The listing changes when each subscription of this connection was accepted, oldest
    /// first, until its `listen` starts (rmcp acknowledges in between).
    listen_baselines: Mutex<std::collections::VecDeque<listing::Changes>>,
    /// The URIs `resources/subscribe` asked updates of (2025-11-25; at most
    /// [`subscriptions::MAX_RESOURCE_SUBSCRIPTIONS`]).
    subscribed: Arc<Mutex<std::collections::BTreeSet<String>>>,
    /// Cancelled when the client's input ends (stdio): its subscriptions end with it
    /// instead of holding the session open.
    input_ended: tokio_util::sync::CancellationToken,
    roots: roots::SessionRoots,
    slots: Arc<Semaphore>,
    /// Sends `*/list_changed` and `resources/updated`; stopped with the session.
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
    /// rmcp's handle on the client (from `initialize`): a legacy session's calls ask their
    /// input requests through it ([`input::session::PeerAsker`]).
    peer: Mutex<Option<Peer<Role>>>,
    /// One request of `--stateless` HTTP: nothing outlives it.
    stateless: bool,
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
                // The stdio guard maps ids; HTTP sessions do not.
                _open: crate::telemetry::metric::OpenSession::open(match ids.is_some() {
                    true => "stdio",
                    false => "http",
                }),
                log_level: Mutex::new(None),
                declared: Mutex::new(None),
                listen_baselines: Mutex::default(),
                subscribed: Arc::default(),
                input_ended: tokio_util::sync::CancellationToken::new(),
                roots: roots::SessionRoots::default(),
                slots,
                notifier: Mutex::new(None),
                ids,
                legacy_protocol: AtomicBool::new(false),
                direct_calls: AtomicBool::new(false),
                peer: Mutex::new(None),
                stateless: false,
            }),
        }
    }

    /// This "session" serves one request of `--stateless` HTTP (made before it is shared).
    #[cfg(feature = "http")]
    pub(crate) fn with_stateless(mut self, stateless: bool) -> Self {
        if let Some(session) = Arc::get_mut(&mut self.session) {
            session.stateless = stateless;
        }
        self
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
        self.shared
            .selection_context_cancelled_by(self.shared.gate.call_token())
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

    /// Starts sending `tools/list_changed` (and those of resources and prompts) to `peer`
    /// whenever a reload changes what this session lists, and `resources/updated` for the
    /// URIs it subscribed to whenever a reload updates the resource serving one.
    fn start_notifier(&self, peer: Peer<Role>) {
        let mut changes = self.shared.listing_changes();
        // Only changes from now on are news to this session.
        let mut seen = changes.borrow_and_update().clone();
        let subscribed = self.session.subscribed.clone();
        let host = self.shared.host.clone();
        let task = tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                let now = changes.borrow_and_update().clone();
                let news = now.since(&seen);
                seen = now;
                let watched: Vec<String> = subscribed.lock().iter().cloned().collect();
                if let Err(e) = subscriptions::notify_session(&peer, &host, &news, &watched).await {
                    tracing::debug!("cannot notify a session of changes: {e}");
                    break;
                }
            }
        });
        if let Some(previous) = self.session.notifier.lock().replace(task) {
            previous.abort();
        }
    }

    /// Ends this session's subscriptions: the client's input has ended (stdio), so nothing
    /// can cancel them any more and the session must not wait for them.
    pub(crate) fn end_subscriptions(&self) {
        self.session.input_ended.cancel();
    }

    /// The declared client of a call the stdio guard answers itself (a session past
    /// `initialize`).
    pub(crate) fn session_peer(&self) -> RequestPeer {
        let level = *self.session.log_level.lock();
        let declared = self.session.declared.lock().clone();
        let mut peer = declared.unwrap_or_else(|| RequestPeer {
            protocol: ProtocolVersion::V_2025_11_25,
            capabilities: Default::default(),
            log_level: None,
        });
        peer.log_level = level;
        peer
    }

    /// Where a call of this (stdio) session comes from: its client as it declared itself
    /// at `initialize`.
    pub(crate) fn session_origin(&self) -> origin::Origin {
        let info = self
            .session
            .peer
            .lock()
            .as_ref()
            .and_then(|peer| peer.peer_info());
        origin::Origin::stdio(info.as_deref().map(|info| &info.client_info))
    }

    /// The declared client of the request behind `context`.
    fn request_peer(&self, context: &RequestContext<RoleServer>) -> RequestPeer {
        if let Some(peer) = RequestPeer::from_meta(&context.meta) {
            return peer;
        }
        if self.session.declared.lock().is_some() {
            return self.session_peer();
        }
        RequestPeer::of_request(context, *self.session.log_level.lock())
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

// rmcp spawns each request's future, which holds the largest of these methods' futures:
// the ones that run work box it (a call's pipeline, a read, a task's), so that spawning
// copies a few hundred bytes, not kilobytes (callgrind: ≈90k instructions of `memcpy` per
// HTTP call before).
impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = Implementation::from_build_env();
        info.name = "toolhost".into();
        info.version = env!("CARGO_PKG_VERSION").into();
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_logging()
            .enable_tasks()
            .build();
        // Advertised only when something is registered (a client then knows to ask); a
        // reload tells of changes, and of updates of the resources a client watches.
        if self.has_resources() {
            let mut resources = rmcp::model::ResourcesCapability::default();
            resources.subscribe = Some(true);
            resources.list_changed = Some(true);
            capabilities.resources = Some(resources);
        }
        if self.has_prompts() {
            let mut prompts = rmcp::model::PromptsCapability::default();
            prompts.list_changed = Some(true);
            capabilities.prompts = Some(prompts);
        }
        if self.has_resources() || self.has_prompts() {
            capabilities.completions = Some(Default::default());
        }
        ServerConfig::new(capabilities).with_server_info(info)
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
        *self.session.peer.lock() = Some(context.peer.clone());
        let negotiated = self.negotiate_initialize(&request)?;
        let mut declared = RequestPeer::from_session(&request, None);
        declared.protocol = negotiated.protocol_version.clone();
        *self.session.declared.lock() = Some(declared);
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
        // Answering `{}` would tell the client its level holds when nothing keeps it.
        if self.session.stateless {
            return Err(McpError::invalid_request(
                "logging/setLevel: this server is stateless (--stateless), so no level \
                 outlives the request that sets it; log notifications are sent at warning \
                 and above, or at the level a request carries in its _meta \
                 (io.modelcontextprotocol/logLevel)",
                None,
            ));
        }
        *self.session.log_level.lock() = Some(request.level);
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let started = std::time::Instant::now();
        let span = trace::listing_span(
            &self.call_id(&context.id),
            self.request_peer(&context).protocol.as_str(),
            &origin::Origin::of_request(&context),
        );
        // Definitions may run `check_fn` probes (Lua): never on an async worker. The span
        // goes along (the probes' spans are its children).
        let server = self.clone();
        let listing = span.clone();
        let tools = tokio::task::spawn_blocking(move || listing.in_scope(|| server.tools()))
            .await
            .map_err(|e| McpError::internal_error(format!("listing tools failed: {e}"), None));
        trace::listed(started, tools.is_ok());
        let tools = tools?;
        // Sorted by name already (the definitions are): the same answer for the same tools.
        let mut result = ListToolsResult::with_all_items(tools);
        if self.request_peer(&context).is_stateless_revision() {
            // A listing depends on the caller's own token and scopes once those exist; it
            // is never shared between users.
            result.ttl_ms = Some(self.shared.list_ttl_ms);
            result.cache_scope = Some(CacheScope::Private);
        }
        Ok(result)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Box::pin(self.resources_page(request, context)).await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        self.templates_page(request, &context)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        Box::pin(self.read(request, context)).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        self.prompts_page(request, &context)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        Box::pin(self.prompt(request, context)).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        Box::pin(self.completion(request, context)).await
    }

    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscribe_uri(request, &context)
    }

    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.unsubscribe_uri(request);
        Ok(())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        // Read by rmcp's HTTP transport to check a call's `Mcp-Param-*` headers.
        self.shared.header_schemas.get(&self.shared, name)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // Counted before rmcp acknowledges the subscription: a change right after the
        // acknowledgment is news to it, one before is not.
        let changes = self.shared.listing_changes();
        let baseline = changes.borrow().clone();
        let mut baselines = self.session.listen_baselines.lock();
        // A subscription rmcp failed to establish after this never pops its baseline:
        // keep the queue bounded (an older baseline only repeats a notification).
        if baselines.len() >= subscriptions::MAX_PENDING_LISTENS {
            baselines.pop_front();
        }
        baselines.push_back(baseline);
        drop(baselines);
        Some(self.accepted_filter(requested))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let changes = self.shared.listing_changes();
        // No baseline (not expected): the count now.
        let baseline = self.session.listen_baselines.lock().pop_front();
        let baseline = baseline.unwrap_or_else(|| changes.borrow().clone());
        // rmcp asks for the filter without the request, so the caller's OAuth scopes are
        // checked here: a URI the caller may not read ends the subscription with the
        // scope error `resources/subscribe` and `resources/read` give.
        self.check_watch_scopes(&context)?;
        let closing = self.shared.gate.closing();
        let input_ended = self.session.input_ended.clone();
        let stopping = async move {
            tokio::select! {
                () = closing.cancelled() => {}
                () = input_ended.cancelled() => {}
            }
        };
        let host = self.shared.host.clone();
        Box::pin(subscriptions::listen(
            context, changes, baseline, &host, stopping,
        ))
        .await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // 2026-07-28 and later: stateless, multi-round input requests; earlier: a session.
        let modern = context
            .protocol_version()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        let continuation = modern.then(|| input::Continuation {
            declared: context.client_capabilities(),
            request_state: request.request_state,
            responses: request.input_responses,
        });
        let call = Call {
            caller: tasks::principal::caller_of(&context),
            peer: self.request_peer(&context),
            tool_call_id: self.call_id(&context.id),
            progress_token: context.meta.get_progress_token(),
            name: request.name.into_owned(),
            arguments: request.arguments,
            continuation,
            origin: origin::Origin::of_request(&context),
        };
        // `[serve.oauth.scopes]`: the HTTP layer answers 403 first; this holds whatever the
        // route.
        if call.caller.scopes().is_some()
            && let Some(scope) = self
                .shared
                .host
                .missing_scope(&call.name, &self.context().with_caller(call.caller.clone()))
        {
            return Err(McpError::new(
                rmcp::model::ErrorCode(INSUFFICIENT_SCOPE),
                format!(
                    "insufficient scope: {} needs the OAuth scope \"{scope}\"",
                    call.name
                ),
                Some(serde_json::json!({"scope": scope})),
            ));
        }
        // A `task` tool: a task for a client of the Tasks extension (docs/mcp-server.md#tasks).
        if let Some((support, budget)) = self.shared.host.task_tool(&call.name, &self.context()) {
            let declared = context
                .client_capabilities()
                .is_some_and(|caps| caps.supports_tasks());
            if declared {
                let principal = call.caller.principal();
                let declared = context.client_capabilities();
                return Box::pin(self.call_as_task(
                    call,
                    budget,
                    principal,
                    declared,
                    context.ct.clone(),
                ))
                .await;
            }
            if support == crate::TaskSupport::Required {
                return Err(McpError::missing_required_client_capability(
                    ClientCapabilities::builder().enable_tasks().build(),
                ));
            }
        }
        // `notifications/cancelled` cancels rmcp's token for this request; on `--stateless`
        // HTTP, where rmcp never sees it, the token the HTTP layer gave the request.
        let cancelled = context.ct.cancelled_owned();
        #[cfg(feature = "http")]
        let cancelled = {
            let stateless = http::stateless_cancel::token_of(&context.extensions);
            async move {
                match stateless {
                    Some(token) => tokio::select! {
                        () = cancelled => {}
                        () = token.cancelled_owned() => {}
                    },
                    None => cancelled.await,
                }
            }
        };
        // Boxed: rmcp spawns this future for the request, and by value the call's (the whole
        // pipeline up to the VM's thread, kilobytes) was copied into the task each time.
        Box::pin(self.run_call(call, Sink::Peer(context.peer.clone()), cancelled))
            .await
            .map_err(|refused| refused.to_error())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let principal = tasks::principal::of(&context);
        Box::pin(self.shared.tasks.get(request.task_id, &principal)).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let principal = tasks::principal::of(&context);
        Box::pin(
            self.shared
                .tasks
                .update(request.task_id, request.input_responses, &principal),
        )
        .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let principal = tasks::principal::of(&context);
        Box::pin(self.shared.tasks.cancel(request.task_id, &principal)).await
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
    /// Who asked, as the request (or its session) declares it.
    pub(crate) peer: RequestPeer,
    /// Who made the call, as its transport vouched for it (`ctx.caller`).
    pub(crate) caller: crate::Caller,
    /// A 2026-07-28 call's capabilities, state and answers (multi-round); `None` for a call
    /// of a 2025-11-25 session, which asks its client directly.
    pub(crate) continuation: Option<input::Continuation>,
    /// Where the call came from (transport, client, trace context).
    pub(crate) origin: origin::Origin,
}

impl McpServer {
    /// `ctx` with the asker and the roots of `call` (with `args`): on a 2025-11-25 session
    /// the session's roots and its client asked by server→client requests; on 2026-07-28
    /// the answers the request brings, replayed, and the roots among them (the returned
    /// asker tells, after the run, which requests it stopped for). `Err`: a refused
    /// `requestState`.
    pub(crate) async fn with_inputs(
        &self,
        ctx: CallContext,
        call: &Call,
        args: &Value,
    ) -> Result<(CallContext, Option<Arc<input::replay::ReplayAsker>>), gate::Refused> {
        self.inputs_of(ctx, &call.name, call.continuation.as_ref(), args)
            .await
    }

    /// [`Self::with_inputs`] for the request bound to `name` (a tool's name; a prompt's or
    /// a resource's in a form no tool has, so a sealed state never passes between them)
    /// with `continuation` (2026-07-28) or none (a 2025-11-25 session).
    pub(crate) async fn inputs_of(
        &self,
        mut ctx: CallContext,
        name: &str,
        continuation: Option<&input::Continuation>,
        args: &Value,
    ) -> Result<(CallContext, Option<Arc<input::replay::ReplayAsker>>), gate::Refused> {
        match continuation {
            None => {
                if let Some(roots) = self.session.roots.current().await {
                    ctx = ctx.with_fs_roots(roots);
                }
                let peer = self.session.peer.lock().clone();
                if let Some(peer) = peer
                    && self.session.legacy_protocol.load(Ordering::Acquire)
                {
                    ctx = ctx.with_asker(Arc::new(input::session::PeerAsker::new(peer)));
                }
                Ok((ctx, None))
            }
            // A missing answer ends the call for input (cancelling its token).
            Some(continuation) => {
                let answers =
                    input::recorded_answers(&self.shared.sealer, name, args, continuation)
                        .map_err(gate::Refused::InputState)?;
                if let Some(roots) = input::recorded_roots(&answers.recorded) {
                    ctx = ctx.with_fs_roots(roots);
                }
                let asker = input::replay_asker(answers, continuation, ctx.cancel.clone());
                ctx = ctx.with_asker(asker.clone());
                Ok((ctx, Some(asker)))
            }
        }
    }

    /// Runs `call` (admitted by the gate, its arguments `args`) through the whole
    /// pipeline; its progress and log lines go to `sink`, and `cancelled` resolving stops
    /// it (it then answers `cancelled`). A 2026-07-28 call that stops for input answers
    /// `input_required`. `Err` is a refused multi-round state or a missing capability.
    /// What the pipeline made of it goes to `reached` (telemetry, the audit log). `args`
    /// is left as it was only when something reads it afterwards (the audit line): else
    /// the host is handed it, not a copy.
    async fn run_admitted(
        &self,
        call: Call,
        sink: Sink,
        cancelled: impl std::future::Future<Output = ()>,
        args: &mut Value,
        reached: &mut served::Reached,
    ) -> Result<CallToolResponse, gate::Refused> {
        let mut ctx = self.context().with_caller(call.caller.clone());
        if let Some(log) = &self.shared.audit {
            ctx = log.auditing(ctx, &call.origin);
        }
        ctx.tool_call_id = Some(call.tool_call_id.clone());
        // Approvals follow `[approval] mcp`.
        ctx = ctx.over_mcp_client();
        // Boxed, as `handle_call` below: inline, each makes this future (and so every future
        // around it, up to the call's task) larger by its own size, and the task's future is
        // copied whole when the call is spawned (callgrind: two copies of ≈5 KB, 10k
        // instructions of `memcpy`, per stdio call).
        let (mut ctx, replay) = Box::pin(self.with_inputs(ctx, &call, args)).await?;
        // A copy only for whoever reads the arguments after the call: the audit line, and a
        // call that may stop for input (its state holds them).
        let handed = match (&self.shared.audit, &replay) {
            (None, None) => std::mem::take(args),
            _ => args.clone(),
        };
        // `None`: a level above anything a tool logs (`critical` and up) lets nothing through.
        let log_level = match call.peer.log_level {
            Some(level) => observer::minimum_level(level),
            // 2026-07-28: log lines are an opt-in of each request.
            None if call.peer.is_stateless_revision() => None,
            None => Some(DEFAULT_LOG_LEVEL),
        };
        let reports = CallReports::start(sink, call.progress_token, log_level);
        if let Some(reports) = &reports {
            ctx = ctx.with_observer(reports.observer());
        }
        // Cancelling the request cancels the call's own token: the host stops the call and
        // answers `cancelled`.
        let cancel = ctx.cancel.clone();
        let host = &self.shared.host;
        let outcome = {
            let mut running = Box::pin(host.handle_call(&call.name, handed, &ctx));
            tokio::pin!(cancelled);
            tokio::select! {
                result = &mut running => result,
                () = &mut cancelled => {
                    cancel.cancel();
                    running.await
                }
            }
        };
        reached.decisions = ctx.decisions().unwrap_or_default();
        reached.error_type = outcome.result.error_type().map(crate::ErrorType::as_str);
        // The observer in `ctx` must go before the reports can finish.
        drop(ctx);
        if let Some(reports) = reports {
            reports.finish().await;
        }
        // Stopped for input: the pending requests and the state to continue with.
        if let Some(asker) = replay {
            let pending = asker.take_pending();
            if !pending.is_empty() {
                return Ok(input::input_required(
                    &self.shared.sealer,
                    &call.name,
                    args,
                    &asker.recorded(),
                    pending,
                )
                .into());
            }
        }
        if let Some(refused) = gate::Refused::of_result(&outcome.result) {
            return Err(refused);
        }
        Ok(to_call_result(outcome.result, outcome.structured).into())
    }
}
