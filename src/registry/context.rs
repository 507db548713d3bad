//! What a handler learns about the call it serves, and the shape of native handlers.

use super::asker::Asker;
use super::caller::Caller;
use super::handler_error::HandlerError;
use super::observe::CallObserver;
use super::selection::ToolsetSelection;
// The one Lua type the registry names: a call may carry its MCP client's roots, which only
// the `fs` API reads (to narrow the allowed roots).
use crate::fs_roots::ClientRoots;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Per-call context, passed to handlers (as the read-only `ctx` table in Lua) and hooks.
///
/// Build it with the `with_*` methods:
/// ```
/// use toolhost::CallContext;
/// let ctx = CallContext::default().with_session_id("s-1").with_scope("project-a");
/// assert_eq!(ctx.scope.as_deref(), Some("project-a"));
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct CallContext {
    /// The model's id for this call, if it gave one.
    pub tool_call_id: Option<String>,
    /// The agent session making the call.
    pub session_id: Option<String>,
    /// The task within the session.
    pub task_id: Option<String>,
    /// The caller's scope overlay (docs/calls.md); `None` sees only global tools.
    pub scope: Option<String>,
    /// Who made the call (Lua's `ctx.caller`): the static token's name, the OAuth token's
    /// subject, or the local user (the default). Calls it makes with `ctx.call` inherit it.
    pub caller: Caller,
    /// The caller's toolset selection (enabled, else the config's `enabled_toolsets`, else
    /// all; minus disabled ones): a tool outside it is `unavailable` to this caller.
    pub toolsets: ToolsetSelection,
    /// Cancelling this token stops the call: it ends at once with a `cancelled` error, a
    /// Lua handler, probe or hook is stopped at its next instruction check, a running
    /// `proc.run` child is killed. Clones share the token: one token can cancel a batch.
    pub cancel: CancellationToken,
    /// Receives the call's progress reports and log lines.
    pub(crate) observer: Option<Arc<dyn CallObserver>>,
    /// The roots this call's MCP client declared: `fs` uses the allowed roots (configured or
    /// implicit) narrowed to them, never more.
    pub(crate) fs_roots: Option<Arc<ClientRoots>>,
    /// Runs `ctx.call` (set by the host for every call it runs).
    pub(crate) tool_caller: Option<Arc<dyn ToolCaller>>,
    /// How many `ctx.call`s deep this call is (0: called from outside).
    pub(crate) depth: u8,
    /// Answers the call's input requests (`ctx.ask`, `ctx.roots`, `ctx.sample`) and the
    /// approval gate's question; `None`: nobody to ask.
    pub(crate) asker: Option<Arc<dyn Asker>>,
    /// The call came from an MCP client: `[approval] mcp` decides its approvals.
    pub(crate) over_mcp: bool,
    /// Prepended to the keys of the call's input requests: `""` for a call from outside,
    /// `c2.` for its second `ctx.call`, `c2.c1.` for that one's first, ...
    pub(crate) ask_prefix: String,
    /// A task tool's call made for an MCP task: called once `prepare` has returned (or at
    /// once when there is none), just before the handler starts; it answers the task's id
    /// once the task exists (`None`: no task, the call goes on as a plain one).
    pub(crate) handover: Option<Handover>,
    /// Where the pipeline notes its hook and approval decisions for the audit log (set by
    /// the MCP server for the calls it audits).
    pub(crate) decisions: Option<Arc<super::Decisions>>,
    /// The call runs on behalf of a read-only tool (set for the calls a read-only tool
    /// makes with `ctx.call`): writes are refused, and only read-only tools run.
    pub(crate) read_only: bool,
    /// Where the call's `ctx.call`s report themselves for the audit log (set by the MCP
    /// server for the calls it audits; children inherit it).
    pub(crate) nested_audit: Option<super::NestedAudit>,
    /// The id of the call that made this one with `ctx.call` (`None`: called from outside).
    pub(crate) parent_call_id: Option<String>,
}

/// What a task tool's call calls between `prepare` and its handler (see
/// [`CallContext::with_handover`]).
pub(crate) type Handover = Arc<dyn Fn() -> NativeFuture<Option<String>> + Send + Sync>;

/// Most nested `ctx.call`s: a chain deeper than this gets an error result.
pub(crate) const MAX_CALL_DEPTH: u8 = 8;

/// What runs `ctx.call(name, args)`: the whole pipeline with the caller's context; the
/// answer is the result as JSON (a string for text, an object for JSON and errors).
pub(crate) trait ToolCaller: Send + Sync {
    /// Calls `name` with `args` as `ctx` (already the child's context) on behalf of a tool
    /// of the trust domain `from`.
    fn call(
        &self,
        from: &CallerDomain,
        name: String,
        args: Value,
        ctx: CallContext,
    ) -> NativeFuture<Value>;
}

/// The trust domain of a running call's tool, captured when the call starts (from its
/// registry entry and the configuration of the generation it runs on) and carried with
/// it. `ctx.call` decides by it, never by looking the caller up by name later: a reload
/// may have renamed the tool or removed its plugin meanwhile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallerDomain {
    /// A tool of a built-in tool directory, or a native one: it may call any tool.
    Builtin,
    /// A tool of plugin `id`.
    Plugin {
        /// The plugin's id (`[plugins.ID]`).
        id: String,
        /// Its configuration granted the `call` capability when the call started.
        may_call_any: bool,
    },
    /// Nothing says whose the call is (a source that runs no handler of its own): it
    /// may call nothing — `ctx.call` fails closed.
    Unknown,
}

impl Default for CallContext {
    fn default() -> Self {
        Self::cancelled_by(CancellationToken::new())
    }
}

impl CallContext {
    /// The default context cancelled by `cancel`. A context built as the default and then
    /// given its token would make a token only to drop it, on every call (an allocation
    /// and a lock each way).
    pub(crate) fn cancelled_by(cancel: CancellationToken) -> Self {
        Self {
            tool_call_id: None,
            session_id: None,
            task_id: None,
            scope: None,
            caller: Caller::default(),
            toolsets: ToolsetSelection::default(),
            cancel,
            observer: None,
            fs_roots: None,
            tool_caller: None,
            depth: 0,
            asker: None,
            over_mcp: false,
            ask_prefix: String::new(),
            handover: None,
            decisions: None,
            read_only: false,
            nested_audit: None,
            parent_call_id: None,
        }
    }
}

impl std::fmt::Debug for CallContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallContext")
            .field("tool_call_id", &self.tool_call_id)
            .field("session_id", &self.session_id)
            .field("task_id", &self.task_id)
            .field("scope", &self.scope)
            .field("caller", &self.caller)
            .field("toolsets", &self.toolsets)
            .field("cancelled", &self.cancel.is_cancelled())
            .field("observed", &self.observer.is_some())
            .field("fs_roots", &self.fs_roots)
            .field("depth", &self.depth)
            .field("asker", &self.asker.is_some())
            .field("over_mcp", &self.over_mcp)
            .finish()
    }
}

impl CallContext {
    /// The model's id for this call.
    pub fn with_tool_call_id(mut self, id: impl Into<String>) -> Self {
        self.tool_call_id = Some(id.into());
        self
    }

    /// The agent session making the call.
    pub fn with_session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }

    /// The task within the session.
    pub fn with_task_id(mut self, id: impl Into<String>) -> Self {
        self.task_id = Some(id.into());
        self
    }

    /// The caller's scope overlay (docs/calls.md).
    pub fn with_scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// Who makes the call (see [`caller`](Self::caller)).
    pub fn with_caller(mut self, caller: Caller) -> Self {
        self.caller = caller;
        self
    }

    /// The caller's enabled toolsets (tools outside them are `unavailable`).
    pub fn with_toolsets<I, S>(mut self, toolsets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.toolsets.enabled = Some(toolsets.into_iter().map(Into::into).collect());
        self
    }

    /// Toolsets subtracted from the caller's selection.
    pub fn with_disabled_toolsets<I, S>(mut self, toolsets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.toolsets.disabled = toolsets.into_iter().map(Into::into).collect();
        self
    }

    /// The token that cancels the call (see [`cancel`](Self::cancel)).
    pub fn with_cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// Where the call's progress reports (`ctx.progress`) and log lines (`log.*`) go.
    pub fn with_observer(mut self, observer: Arc<dyn CallObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Who answers the call's input requests: `ctx.ask`, `ctx.roots`, `ctx.sample` (and,
    /// over MCP, the approval gate's question). Without one `ctx.ask` answers `cancel`,
    /// `ctx.roots` an empty list and `ctx.sample` fails. Nested `ctx.call`s share it.
    pub fn with_asker(mut self, asker: Arc<dyn Asker>) -> Self {
        self.asker = Some(asker);
        self
    }

    /// The asker, if any.
    pub(crate) fn asker(&self) -> Option<&Arc<dyn Asker>> {
        self.asker.as_ref()
    }

    /// Marks the call as coming from an MCP client (`[approval] mcp` applies).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn over_mcp_client(mut self) -> Self {
        self.over_mcp = true;
        self
    }

    /// The observer, if any.
    pub(crate) fn observer(&self) -> Option<&Arc<dyn CallObserver>> {
        self.observer.as_ref()
    }

    /// Narrows this call's `fs` to an MCP client's `roots` (within the allowed roots).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn with_fs_roots(mut self, roots: Arc<ClientRoots>) -> Self {
        self.fs_roots = Some(roots);
        self
    }

    /// This context with a place where the pipeline notes its hook and approval decisions
    /// (read them with [`decisions`](Self::decisions) after the call).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn noting_decisions(mut self) -> Self {
        self.decisions = Some(Arc::default());
        self
    }

    /// This context with `audit` hearing of each `ctx.call` the call makes, at any depth
    /// (each then notes its own decisions).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn auditing_nested<F>(mut self, audit: F) -> Self
    where
        F: Fn(&super::NestedCall<'_>) + Send + Sync + 'static,
    {
        self.nested_audit = Some(Arc::new(audit));
        self
    }

    /// The hooks' and the approval's decisions about the call, when this context notes
    /// them (`None` for a stage that did not decide).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn decisions(&self) -> Option<(Option<&'static str>, Option<&'static str>)> {
        self.decisions.as_ref().map(|decisions| decisions.get())
    }

    /// The context of a call this call makes with `ctx.call` (its `index`-th): same ids,
    /// caller, scope, selection, observer, roots, asker and cancellation, one level deeper, with the
    /// child's call id and its own prefix for input-request keys.
    pub(crate) fn child(&self, tool_call_id: String, index: u32) -> Self {
        let mut child = self.clone();
        // The task is the parent's: a tool it calls runs inside it, never becomes one.
        child.handover = None;
        // The child's decisions are its own, not the caller's: a fresh place when audited.
        child.decisions = self.decisions.as_ref().map(|_| Arc::default());
        child.parent_call_id = self.tool_call_id.clone();
        child.tool_call_id = Some(tool_call_id);
        child.depth = self.depth.saturating_add(1);
        child.ask_prefix = format!("{}c{index}.", self.ask_prefix);
        child
    }

    /// The roots this call's MCP client declared, if it has them.
    pub(crate) fn fs_roots(&self) -> Option<&Arc<ClientRoots>> {
        self.fs_roots.as_ref()
    }

    /// Makes this call of a task tool an MCP task's: `handover` runs after the tool's
    /// `prepare` (before its handler) and answers the task's id, which the handler then
    /// sees as `ctx.task_id`.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn with_handover<F, Fut>(mut self, handover: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<String>> + Send + 'static,
    {
        self.handover = Some(Arc::new(move || Box::pin(handover())));
        self
    }

    /// Reaches the handover point: the task's id when the call became a task.
    pub(crate) async fn hand_over(&self) -> Option<String> {
        match &self.handover {
            Some(handover) => handover().await,
            None => None,
        }
    }
}

/// The future a native handler returns (by default): the tool's result (a JSON string for
/// text, an object for structured or multimodal results) or its failure.
pub(crate) type NativeFuture<T = Result<Value, HandlerError>> =
    Pin<Box<dyn Future<Output = T> + Send>>;

/// A Rust async tool handler: `(args, ctx) -> result`.
pub(crate) type NativeHandler = Arc<dyn Fn(Value, CallContext) -> NativeFuture + Send + Sync>;

/// A Rust availability probe or schema-override function.
pub(crate) type NativeProbe<T> = Arc<dyn Fn() -> T + Send + Sync>;
