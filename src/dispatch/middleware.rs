//! Stage 7: execution middleware. Each middleware gets the call and `next`; `next.run(call)`
//! passes the call on (to the next middleware, finally the handler). `Next` is consumed by
//! `run`, so running it twice does not compile: a middleware can never execute a tool
//! twice by accident. A middleware may also answer without calling `next` (a cache, a
//! dry-run), or change the call it passes on.

use super::ToolResult;
use crate::registry::CallContext;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed future borrowed for `'a`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The call as middleware sees it (arguments already coerced, hooked, approved and
/// validated).
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The tool.
    pub name: String,
    /// The arguments.
    pub args: Value,
    /// The call context.
    pub ctx: CallContext,
}

/// Wraps tool execution.
pub trait Middleware: Send + Sync {
    /// Handles `call`, usually by `next.run(call)` with work before and after.
    fn handle<'a>(&'a self, call: ToolCall, next: Next<'a>) -> BoxFuture<'a, ToolResult>;
}

/// The terminal step: run the handler.
pub(super) type Terminal<'a> = dyn Fn(ToolCall) -> BoxFuture<'a, ToolResult> + Send + Sync + 'a;

/// The rest of the chain.
pub struct Next<'a> {
    rest: &'a [Arc<dyn Middleware>],
    terminal: &'a Terminal<'a>,
}

impl<'a> Next<'a> {
    /// The chain `chain` ending in `terminal`.
    pub(crate) fn new(chain: &'a [Arc<dyn Middleware>], terminal: &'a Terminal<'a>) -> Self {
        Self {
            rest: chain,
            terminal,
        }
    }

    /// Passes the call on; consumes `self`.
    pub fn run(self, call: ToolCall) -> BoxFuture<'a, ToolResult> {
        match self.rest.split_first() {
            Some((middleware, rest)) => middleware.handle(
                call,
                Next {
                    rest,
                    terminal: self.terminal,
                },
            ),
            None => (self.terminal)(call),
        }
    }
}
