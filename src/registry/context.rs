//! What a handler learns about the call it serves, and the shape of native handlers.

use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// Per-call context, passed to handlers (as the read-only `ctx` table in Lua) and hooks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
}

/// The future a native handler returns: the tool's result (a JSON string for text, an
/// object for structured or multimodal results) or an error message.
pub type NativeFuture = Pin<Box<dyn Future<Output = Result<Value, String>> + Send>>;

/// A Rust async tool handler: `(args, ctx) -> result`.
pub type NativeHandler = Arc<dyn Fn(Value, CallContext) -> NativeFuture + Send + Sync>;

/// A Rust availability probe or schema-override function.
pub type NativeProbe<T> = Arc<dyn Fn() -> T + Send + Sync>;
