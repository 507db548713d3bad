//! A `tools/call` that becomes a task. The call runs through the same gate and pipeline as
//! any call (hooks, approval, validation, then the tool's `prepare`), in the background;
//! when it reaches the handler it hands over: the task's record is committed (so the
//! `tasks/get` that follows the answer finds it), the request answers with the task, and
//! the handler runs on with the task's id. A call that ends before its handler (refused,
//! invalid arguments, `prepare` raised) is answered as a plain call, and no task exists.
//!
//! The call has its own cancellation token (a child of the server's drain token:
//! shutdown ends it too): cancelling the request cancels it until the task exists, then
//! only `tasks/cancel` does. Its progress shows in `tasks/get`; its log lines go to the
//! server's log only (the extension sends no notifications for tasks).

use super::created;
use super::records::{INTERNAL_ERROR, TaskEnd, rpc_error};
use super::runner::Running;
use crate::mcp::server::content::to_call_result;
use crate::mcp::server::{Call, McpServer};
use crate::{ErrorType, ToolResult};
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResponse, JsonObject};
use serde_json::Value;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// Time a task gets beyond its handler's deadline before a record still `working` counts
/// as lost (post hooks, the result's conversion and recording).
const GRACE: Duration = Duration::from_secs(60);

/// The handover: the call asks for its task, the request answers with the task's id.
type HandoverReply = oneshot::Sender<Option<String>>;

impl McpServer {
    /// Whether `name` is a `task` tool of this server's selection.
    pub(crate) fn is_task_tool(&self, name: &str) -> bool {
        self.shared.host.task_tool(name, &self.context()).is_some()
    }

    /// Runs `call` as a task of `principal`; `budget` is the handler's deadline, `request`
    /// the request's cancellation. Answers the task once the call reaches its handler, or
    /// the call's own result when it ends before.
    pub(crate) async fn call_as_task(
        &self,
        call: Call,
        budget: Duration,
        principal: &'static str,
        request: CancellationToken,
    ) -> Result<CallToolResponse, McpError> {
        let token = self.shared.gate.call_token();
        let running = Running::new(token.clone());
        // The pipeline's handover point calls this; the request below answers it.
        let (ask, mut asked) = mpsc::channel::<HandoverReply>(1);
        let handover = move || {
            let ask = ask.clone();
            async move {
                let (reply, id) = oneshot::channel();
                ask.send(reply).await.ok()?;
                id.await.ok().flatten()
            }
        };
        let server = self.clone();
        let observer = running.clone();
        let name = call.name.clone();
        let mut work = tokio::spawn(async move {
            // A place of its own: a task outlives the request (and the session) that made
            // it, so it counts against `max_calls`, not the session's calls.
            let slots = server.shared.gate.session_slots();
            let _admitted = server
                .shared
                .gate
                .admit(&slots)
                .await
                .map_err(|r| r.to_string())?;
            let mut ctx = server.context();
            ctx.cancel = token;
            ctx.tool_call_id = Some(call.tool_call_id);
            if let Some(roots) = server.session.roots.current().await {
                ctx = ctx.with_fs_roots(roots);
            }
            // A task's input requests (`ctx.ask` after the handover) belong in
            // `running.inputs` (`input_required`, answered by `tasks/update`); before the
            // handover, `prepare`'s are the request's own rounds.
            ctx = ctx.with_observer(observer).with_handover(handover);
            let args = call.arguments.map(Value::Object).unwrap_or_default();
            let outcome = server.shared.host.handle_call(&call.name, args, &ctx).await;
            Ok::<_, String>((outcome.result, outcome.structured))
        });
        // Until the task exists the call is the request's: if this future is dropped (the
        // session went away), the call stops rather than run on unseen.
        let abandoned = running.cancel.clone().drop_guard();
        let reply = tokio::select! {
            reply = asked.recv() => reply,
            ended = &mut work => return plain(ended),
            () = request.cancelled() => {
                running.cancel.cancel();
                return Err(McpError::internal_error("the request was cancelled", None));
            }
        };
        // No handover and the channel closed: the call ended before its handler.
        let Some(reply) = reply else {
            return plain(work.await);
        };
        let tasks = &self.shared.tasks;
        let records = tasks.records.clone();
        let made =
            tokio::task::spawn_blocking(move || records.create(&name, principal, budget + GRACE))
                .await;
        let made = match made {
            Ok(made) => made.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        let (id, record) = match made {
            Ok(made) => made,
            Err(why) => {
                // No task: the handler must not run on unseen.
                running.cancel.cancel();
                let _ = reply.send(None);
                return Err(McpError::internal_error(
                    format!("creating the task failed: {why}"),
                    None,
                ));
            }
        };
        abandoned.disarm();
        tasks.runner.insert(&id, running.clone());
        let _ = reply.send(Some(id.clone()));
        let (records, runner, task_id) = (tasks.records.clone(), tasks.runner.clone(), id.clone());
        tokio::spawn(async move {
            let end = match work.await {
                Ok(Ok((result, structured))) => ended(result, structured, &running),
                Ok(Err(refused)) => failed(&refused, None),
                Err(e) => failed(&format!("the task's call failed: {e}"), None),
            };
            // The record first, then the entry: a `tasks/get` in between still finds the
            // task running here, never a `working` record with no runner.
            let stored = {
                let id = task_id.clone();
                tokio::task::spawn_blocking(move || records.finish(&id, end)).await
            };
            match stored {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!("the end of task {task_id} was not recorded: {e}"),
                Err(e) => tracing::warn!("the end of task {task_id} was not recorded: {e}"),
            }
            runner.remove(&task_id);
        });
        Ok(created(&id, &record).into())
    }
}

/// The answer of a call that ended before its handler: the plain call's, no task.
fn plain(
    ended: Result<Result<(ToolResult, bool), String>, tokio::task::JoinError>,
) -> Result<CallToolResponse, McpError> {
    match ended {
        Ok(Ok((result, structured))) => Ok(to_call_result(result, structured).into()),
        Ok(Err(refused)) => Err(McpError::internal_error(refused, None)),
        Err(e) => Err(McpError::internal_error(
            format!("the call failed: {e}"),
            None,
        )),
    }
}

/// How a task's call that reached its handler ended.
fn ended(result: ToolResult, structured: bool, running: &Running) -> TaskEnd {
    match result.error() {
        Some(error) if error.kind == ErrorType::Cancelled && running.cancel_requested() => {
            TaskEnd::Cancelled
        }
        // The host ended the call: the task failed. Anything the tool itself answered, an
        // error it raised included, is the task's result.
        Some(error)
            if matches!(
                error.kind,
                ErrorType::Timeout | ErrorType::Memory | ErrorType::Cancelled
            ) =>
        {
            failed(&error.message, Some(error.to_json()))
        }
        _ => {
            let result = to_call_result(result, structured);
            match serde_json::to_value(result) {
                Ok(Value::Object(result)) => TaskEnd::Completed(result),
                _ => failed("the result could not be encoded", None),
            }
        }
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
