//! A `tools/call` that becomes a task: the record is committed first (so the `tasks/get`
//! that follows the answer finds it), then the call runs in the background through the
//! same gate and pipeline as any call, with the task's own cancellation token (a child of
//! the server's drain token: shutdown ends it too) and no request to report on (its
//! progress shows in `tasks/get`; its log lines go to the server's log only).

use super::created;
use super::records::{INTERNAL_ERROR, TaskEnd, rpc_error};
use crate::ErrorType;
use crate::mcp::server::content::to_call_result;
use crate::mcp::server::{Call, McpServer};
use rmcp::ErrorData as McpError;
use rmcp::model::{CreateTaskResult, JsonObject};
use serde_json::Value;
use std::time::Duration;

/// Time a task gets beyond its handler's deadline before a record still `working` counts
/// as lost (hooks, approval, the result's conversion and recording).
const GRACE: Duration = Duration::from_secs(60);

impl McpServer {
    /// Whether `name` is a `task` tool of this server's selection.
    pub(crate) fn is_task_tool(&self, name: &str) -> bool {
        let scope = self.shared.selection.scope.as_deref();
        self.shared.host.task_tool(name, scope).is_some()
    }

    /// Creates a task for `call` and starts it; `budget` is the handler's deadline.
    pub(crate) async fn call_as_task(
        &self,
        call: Call,
        budget: Duration,
    ) -> Result<CreateTaskResult, McpError> {
        let tasks = &self.shared.tasks;
        // Until the call gets a place at the gate, the record's deadline is its TTL: a
        // task waiting in the queue is not lost.
        let records = tasks.records.clone();
        let waiting = records.ttl().max(budget + GRACE);
        let name = call.name.clone();
        let made = tokio::task::spawn_blocking(move || records.create(&name, waiting))
            .await
            .map_err(|e| McpError::internal_error(format!("creating the task failed: {e}"), None))?
            .map_err(|e| McpError::internal_error(format!("creating the task failed: {e}"), None))?;
        let (id, record) = made;
        let token = self.shared.gate.call_token();
        let server = self.clone();
        let records = tasks.records.clone();
        let task_id = id.clone();
        tasks.runner.spawn(tasks.records.clone(), id.clone(), token, move |running| {
            async move {
                // A place of its own: a task outlives the request (and the session) that
                // made it, so it counts against `max_calls`, not the session's calls.
                let slots = server.shared.gate.session_slots();
                let _admitted = match server.shared.gate.admit(&slots).await {
                    Ok(admitted) => admitted,
                    Err(refused) => return failed(&refused.to_string(), None),
                };
                let started = tokio::task::spawn_blocking(move || {
                    records.started(&task_id, budget + GRACE)
                })
                .await;
                if let Ok(Err(e)) = started {
                    tracing::debug!("task deadline not recorded: {e}");
                }
                let mut ctx = server.context();
                ctx.cancel = running.cancel.clone();
                ctx.tool_call_id = Some(call.tool_call_id);
                if let Some(roots) = server.session.roots.current().await {
                    ctx = ctx.with_fs_roots(roots);
                }
                ctx = ctx.with_observer(running.clone());
                let args = call.arguments.map(Value::Object).unwrap_or_default();
                let outcome = server.shared.host.handle_call(&call.name, args, &ctx).await;
                drop(ctx);
                match outcome.result.error() {
                    Some(error) if error.kind == ErrorType::Cancelled && running.cancel_requested() => {
                        TaskEnd::Cancelled
                    }
                    // The host ended the call: the task failed. Anything the tool itself
                    // answered, an error it raised included, is the task's result.
                    Some(error)
                        if matches!(
                            error.kind,
                            ErrorType::Timeout | ErrorType::Memory | ErrorType::Cancelled
                        ) =>
                    {
                        failed(&error.message, Some(error.to_json()))
                    }
                    _ => {
                        let result = to_call_result(outcome.result, outcome.structured);
                        match serde_json::to_value(result) {
                            Ok(Value::Object(result)) => TaskEnd::Completed(result),
                            _ => failed("the result could not be encoded", None),
                        }
                    }
                }
            }
        });
        Ok(created(&id, &record))
    }
}

/// A task the host ended: a JSON-RPC internal error carrying the host's error object.
fn failed(message: &str, data: Option<Value>) -> TaskEnd {
    let mut error: JsonObject = rpc_error(INTERNAL_ERROR, message);
    if let Some(data) = data {
        error.insert("data".into(), data);
    }
    TaskEnd::Failed {
        message: message.to_string(),
        error,
    }
}
