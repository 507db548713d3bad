//! The `complete` functions of a native resource or prompt, by argument, as the one
//! dispatcher the host calls with `{"argument", "value"}` (as a Lua `complete` table is).

use crate::registry::{CallContext, ContentFn, HandlerError, NativeFuture, NativeHandler};
use serde_json::Value;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

/// One argument's completion function.
type Completer = Arc<
    dyn Fn(String, CallContext) -> NativeFuture<Result<Vec<String>, HandlerError>> + Send + Sync,
>;

/// Completion functions by argument name.
#[derive(Clone, Default)]
pub(super) struct Completers(BTreeMap<String, Completer>);

impl Completers {
    /// Sets `argument`'s function (a second one for the same argument replaces the first).
    pub(super) fn add<F, Fut>(&mut self, argument: &str, complete: F)
    where
        F: Fn(String, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, HandlerError>> + Send + 'static,
    {
        self.0.insert(
            argument.to_string(),
            Arc::new(move |prefix, ctx| Box::pin(complete(prefix, ctx))),
        );
    }

    /// The arguments completed.
    pub(super) fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// One function taking `{"argument", "value"}` and answering a JSON array, and the
    /// arguments it completes; `None` when there are none.
    pub(super) fn into_dispatcher(self) -> Option<(ContentFn, Vec<String>)> {
        if self.0.is_empty() {
            return None;
        }
        let names: Vec<String> = self.0.keys().cloned().collect();
        let by_name = Arc::new(self.0);
        let dispatcher: NativeHandler = Arc::new(move |request: Value, ctx| {
            let argument = request["argument"].as_str().unwrap_or_default();
            let prefix = request["value"].as_str().unwrap_or_default().to_string();
            let function = by_name.get(argument).cloned();
            Box::pin(async move {
                let Some(function) = function else {
                    return Ok(Value::Array(Vec::new()));
                };
                let values = function(prefix, ctx).await?;
                Ok(Value::from(values))
            })
        });
        Some((ContentFn::Native(dispatcher), names))
    }
}
