//! What a handler learns about the call it serves, and the shape of native handlers.

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
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CallContext {
    /// The model's id for this call, if it gave one.
    pub tool_call_id: Option<String>,
    /// The agent session making the call.
    pub session_id: Option<String>,
    /// The task within the session.
    pub task_id: Option<String>,
    /// The caller's scope overlay (§3); `None` sees only global tools.
    pub scope: Option<String>,
    /// The caller's enabled toolsets (`None`: the config's `enabled_toolsets`, else all);
    /// a tool outside the selection is `unavailable` to this caller.
    pub toolsets: Option<Vec<String>>,
    /// Toolsets subtracted from the caller's selection (besides `disabled_toolsets`).
    pub disabled_toolsets: Vec<String>,
    /// Cancelling this token stops the call: it ends at once with a `cancelled` error, a
    /// Lua handler, probe or hook is stopped at its next instruction check, a running
    /// `proc.run` child is killed. Clones share the token: one token can cancel a batch.
    pub cancel: CancellationToken,
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

    /// The caller's scope overlay (SPEC §3).
    pub fn with_scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// The caller's enabled toolsets (tools outside them are `unavailable`).
    pub fn with_toolsets<I, S>(mut self, toolsets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.toolsets = Some(toolsets.into_iter().map(Into::into).collect());
        self
    }

    /// Toolsets subtracted from the caller's selection.
    pub fn with_disabled_toolsets<I, S>(mut self, toolsets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.disabled_toolsets = toolsets.into_iter().map(Into::into).collect();
        self
    }

    /// The token that cancels the call (see [`cancel`](Self::cancel)).
    pub fn with_cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }
}

/// The future a native handler returns: the tool's result (a JSON string for text, an
/// object for structured or multimodal results) or an error message.
pub(crate) type NativeFuture = Pin<Box<dyn Future<Output = Result<Value, String>> + Send>>;

/// A Rust async tool handler: `(args, ctx) -> result`.
pub(crate) type NativeHandler = Arc<dyn Fn(Value, CallContext) -> NativeFuture + Send + Sync>;

/// A Rust availability probe or schema-override function.
pub(crate) type NativeProbe<T> = Arc<dyn Fn() -> T + Send + Sync>;
