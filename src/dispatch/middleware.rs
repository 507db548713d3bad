//! Stage 7: execution middleware. Each middleware gets the call and `next`; `next.run(call)`
//! passes the call on (to the next middleware, finally the handler). `Next` is consumed by
//! `run`, so running it twice does not compile: a middleware can never execute a tool
//! twice by accident. A middleware may also answer without calling `next` (a cache, a
//! dry-run), or change the call it passes on.
//!
//! A middleware that panics cannot lose the call or run the tool twice: panicking before
//! the rest of the chain started, it is skipped (logged by name) and the chain goes on
//! without it; panicking after the rest of the chain returned, that result stands (the
//! panic is logged); panicking while the tool runs, the call ends with a `handler_error`.

use super::ToolResult;
use super::errors::ErrorType;
use super::result::ToolError;
use crate::registry::CallContext;
use parking_lot::Mutex;
use serde_json::Value;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

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

    /// The name logs use for this middleware (default: its type's name).
    fn name(&self) -> &str {
        std::any::type_name::<Self>()
    }
}

/// The terminal step: run the handler.
pub(super) type Terminal<'a> = dyn Fn(ToolCall) -> BoxFuture<'a, ToolResult> + Send + Sync + 'a;

/// The rest of the chain.
pub struct Next<'a> {
    rest: &'a [Arc<dyn Middleware>],
    terminal: &'a Terminal<'a>,
    /// What the middleware that received this `Next` did with it.
    watch: Option<Arc<Downstream>>,
}

/// Whether the rest of a chain started, and what it returned.
#[derive(Default)]
struct Downstream {
    started: AtomicBool,
    result: Mutex<Option<ToolResult>>,
}

impl<'a> Next<'a> {
    /// The chain `chain` ending in `terminal`.
    pub(crate) fn new(chain: &'a [Arc<dyn Middleware>], terminal: &'a Terminal<'a>) -> Self {
        Self {
            rest: chain,
            terminal,
            watch: None,
        }
    }

    /// Passes the call on; consumes `self`.
    pub fn run(self, call: ToolCall) -> BoxFuture<'a, ToolResult> {
        let inner = self.unwatched(call);
        match self.watch {
            None => inner,
            Some(watch) => Box::pin(async move {
                watch.started.store(true, Ordering::SeqCst);
                let result = inner.await;
                *watch.result.lock() = Some(result.clone());
                result
            }),
        }
    }

    /// The rest of the chain, each middleware guarded against panics.
    fn unwatched(&self, call: ToolCall) -> BoxFuture<'a, ToolResult> {
        let Some((middleware, rest)) = self.rest.split_first() else {
            return (self.terminal)(call);
        };
        let terminal = self.terminal;
        let watch = Arc::new(Downstream::default());
        let next = Next {
            rest,
            terminal,
            watch: Some(watch.clone()),
        };
        let skip = Next {
            rest,
            terminal,
            watch: None,
        };
        let retry = call.clone();
        let handled = match catch_unwind(AssertUnwindSafe(|| middleware.handle(call, next))) {
            Ok(future) => future,
            Err(_) => {
                // `next.run` only builds a future: nothing downstream has run yet.
                tracing::error!("middleware {} panicked; skipping it", middleware.name());
                return skip.unwatched(retry);
            }
        };
        Box::pin(async move {
            match (CatchUnwind { inner: handled }).await {
                Ok(result) => result,
                Err(()) => {
                    let name = middleware.name();
                    if let Some(result) = watch.result.lock().take() {
                        tracing::error!(
                            "middleware {name} panicked after the tool returned; keeping its result"
                        );
                        return result;
                    }
                    if !watch.started.load(Ordering::SeqCst) {
                        tracing::error!("middleware {name} panicked; skipping it");
                        return skip.unwatched(retry).await;
                    }
                    // The tool was running: running it again could do its work twice.
                    tracing::error!("middleware {name} panicked while the tool was running");
                    ToolError::execution_failed(
                        ErrorType::HandlerError,
                        format_args!("middleware {name} failed while {} was running", retry.name),
                    )
                    .into()
                }
            }
        })
    }
}

/// A future whose panics become `Err(())`.
struct CatchUnwind<F> {
    inner: F,
}

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, ()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.inner;
        match catch_unwind(AssertUnwindSafe(|| Pin::new(&mut *inner).poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Err(_) => Poll::Ready(Err(())),
        }
    }
}
