//! A `tools/call` that becomes a task. The call runs through the same gate and pipeline as
//! any call (hooks, approval, validation, then the tool's `prepare`), in the background;
//! when it reaches the handler it hands over: the task's record is committed (so the
//! `tasks/get` that follows the answer finds it), the request answers with the task, and
//! the handler runs on with the task's id. A call that ends before its handler (refused,
//! invalid arguments, `prepare` raised) is answered as a plain call, and no task exists;
//! one whose approval or `prepare` stopped for input in a 2026-07-28 round answers
//! `input_required` (the retry runs it again, [`TaskAsker`] before the handover).
//!
//! The call has its own cancellation token (a child of the server's drain token:
//! shutdown ends it too): cancelling the request cancels it until the task exists, then
//! only `tasks/cancel` does. Its progress shows in `tasks/get`; its log lines go to the
//! server's log only (the extension sends no notifications for tasks).

use super::asker::TaskAsker;
use super::created;
use super::records::{INTERNAL_ERROR, TaskEnd, rpc_error};
use super::report::{Decisions, TaskReport};
use super::runner::Running;
use crate::mcp::server::content::to_call_result;
use crate::mcp::server::gate::Refused;
use crate::mcp::server::input::{self, replay::ReplayAsker};
use crate::mcp::server::trace::refusal_type;
use crate::mcp::server::{Call, McpServer};
use crate::{ErrorType, ToolResult};
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResponse, ClientCapabilities, JsonObject};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// Time a task gets beyond its handler's deadline before a record still `working` counts
/// as lost (post hooks, the result's conversion and recording).
const GRACE: Duration = Duration::from_secs(60);

/// The handover: the call asks for its task, the request answers with the task's id.
type HandoverReply = oneshot::Sender<Option<String>>;

impl McpServer {
    /// Whether `name` is a `task` tool of this server's selection.
    pub(crate) fn is_task_tool(&self, name: &str) -> bool {
        // The selection alone decides it: a call's context would also take a token from the
        // gate, made and dropped again on every direct call. Most tools are no task tools,
        // which their registration tells without even the selection's context (a new
        // cancellation token and two clones, on the path of every direct call).
        let host = &self.shared.host;
        host.declares_task(name, self.shared.selection.scope.as_deref())
            && host
                .task_tool(name, &self.shared.selection_context())
                .is_some()
    }

    /// Runs `call` as a task of `principal` (whose client declared `declared`); `budget`
    /// is the handler's deadline, `request` the request's cancellation. Answers the task
    /// once the call reaches its handler, or the call's own result when it ends before
    /// (`input_required` when `prepare` asked in a 2026-07-28 round).
    pub(crate) async fn call_as_task(
        &self,
        mut call: Call,
        budget: Duration,
        principal: String,
        declared: Option<ClientCapabilities>,
        request: CancellationToken,
    ) -> Result<CallToolResponse, McpError> {
        let token = self.shared.gate.call_token();
        let running = Running::new(token.clone());
        let args = call.arguments.take().map(Value::Object).unwrap_or_default();
        let report = TaskReport::start(self, &call, &args);
        let mut ctx = self.context().with_caller(call.caller.clone());
        if let Some(log) = &self.shared.audit {
            ctx = log.auditing(ctx, &call.origin);
        }
        ctx.cancel = token;
        ctx.tool_call_id = Some(call.tool_call_id.clone());
        // Approvals follow `[approval] mcp`, as for any call of an MCP client.
        ctx = ctx.over_mcp_client();
        // Before the handover the request's own way of asking (its rounds stop the call
        // through `token`), after it the task's (see `TaskAsker`).
        let (ctx, replay) = match self.with_inputs(ctx, &call, &args).await {
            Ok(made) => made,
            Err(refused) => {
                report.refused(refusal_type(&refused));
                return Err(refused.to_error());
            }
        };
        let asker = Arc::new(TaskAsker::new(
            ctx.asker().cloned(),
            running.clone(),
            declared,
        ));
        let mut ctx = ctx.with_asker(asker.clone());
        // The pipeline's handover point calls this; the request below answers it.
        let (ask, mut asked) = mpsc::channel::<HandoverReply>(1);
        let handover = move || {
            let ask = ask.clone();
            let asker = asker.clone();
            async move {
                let (reply, id) = oneshot::channel();
                ask.send(reply).await.ok()?;
                let id = id.await.ok().flatten()?;
                asker.hand_over();
                Some(id)
            }
        };
        ctx = ctx.with_observer(running.clone()).with_handover(handover);
        let server = self.clone();
        let name = call.name.clone();
        let before = PlainEnd {
            replay,
            server: self.clone(),
            name: name.clone(),
            args: args.clone(),
        };
        let mut work = tokio::spawn(
            async move {
                // A place of its own: a task outlives the request (and the session) that
                // made it, so it counts against `max_calls`, not the session's calls.
                let slots = server.shared.gate.session_slots();
                let _admitted = server.shared.gate.admit(&slots).await?;
                let outcome = server.shared.host.handle_call(&call.name, args, &ctx).await;
                let decisions = ctx.decisions().unwrap_or_default();
                Ok::<_, Refused>((outcome.result, outcome.structured, decisions))
            }
            // The call's stage spans are the request's children (the request span is its own).
            .instrument(report.span()),
        );
        // Until the task exists the call is the request's: if this future is dropped (the
        // session went away), the call stops rather than run on unseen.
        let abandoned = running.cancel.clone().drop_guard();
        let reply = tokio::select! {
            reply = asked.recv() => reply,
            ended = &mut work => return before.answer(ended, report),
            () = request.cancelled() => {
                running.cancel.cancel();
                // The call still ends (cancelled) and is reported then.
                tokio::spawn(async move { PlainEnd::report(work.await, report) });
                return Err(McpError::internal_error("the request was cancelled", None));
            }
        };
        // No handover and the channel closed: the call ended before its handler.
        let Some(reply) = reply else {
            return before.answer(work.await, report);
        };
        let tasks = &self.shared.tasks;
        let records = tasks.records.clone();
        let made =
            tokio::task::spawn_blocking(move || records.create(&name, &principal, budget + GRACE))
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
                // The call ends cancelled, as a plain call (no task), and is reported then.
                tokio::spawn(async move { PlainEnd::report(work.await, report) });
                return Err(McpError::internal_error(
                    format!("creating the task failed: {why}"),
                    None,
                ));
            }
        };
        abandoned.disarm();
        report.became(&id);
        running.became(&id, tasks.records.clone());
        tasks.runner.insert(&id, running.clone());
        tasks.watcher.ensure(&tasks.runner, &tasks.records);
        let _ = reply.send(Some(id.clone()));
        let (records, runner, task_id) = (tasks.records.clone(), tasks.runner.clone(), id.clone());
        tokio::spawn(async move {
            let end = match work.await {
                Ok(Ok((result, structured, decisions))) => {
                    // Audited before the end is recorded: before `tasks/get` shows it.
                    let error_type = result.error_type().map(ErrorType::as_str);
                    let outcome = if error_type.is_some() { "error" } else { "ok" };
                    report.ended(Some(&task_id), decisions, outcome, error_type);
                    ended(result, structured, &running)
                }
                Ok(Err(refused)) => {
                    report.refused(refusal_type(&refused));
                    failed(&refused.to_string(), None)
                }
                Err(e) => {
                    report.ended(Some(&task_id), Decisions::default(), "error", None);
                    failed(&format!("the task's call failed: {e}"), None)
                }
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

/// What answers a call that ended before its handler (no task): the plain call's answer.
struct PlainEnd {
    /// The 2026-07-28 asker of the request's rounds, if any.
    replay: Option<Arc<ReplayAsker>>,
    /// The server (its sealer seals a round's state).
    server: McpServer,
    name: String,
    args: Value,
}

impl PlainEnd {
    /// The answer: `input_required` when `prepare` (or the approval) stopped for input in a
    /// 2026-07-28 round, -32021 for a missing capability, else the call's result.
    fn answer(self, ended: Ended, report: TaskReport) -> Result<CallToolResponse, McpError> {
        if let Some(replay) = &self.replay {
            let pending = replay.take_pending();
            if !pending.is_empty() {
                let decisions = match &ended {
                    Ok(Ok((_, _, decisions))) => *decisions,
                    _ => Decisions::default(),
                };
                report.ended(None, decisions, "input_required", None);
                return Ok(input::input_required(
                    &self.server.shared.sealer,
                    &self.name,
                    &self.args,
                    &replay.recorded(),
                    pending,
                )
                .into());
            }
        }
        let answer = match &ended {
            Ok(Ok((result, _, _))) => match Refused::of_result(result) {
                Some(refused) => Err(refused.to_error()),
                None => Ok(()),
            },
            Ok(Err(refused)) => Err(refused.to_error()),
            Err(e) => Err(McpError::internal_error(
                format!("the call failed: {e}"),
                None,
            )),
        };
        let structured = matches!(&ended, Ok(Ok((_, true, _))));
        let result = Self::report(ended, report);
        answer?;
        match result {
            Some(result) => Ok(to_call_result(result, structured).into()),
            None => Err(McpError::internal_error("the call failed", None)),
        }
    }

    /// Reports how a call that became no task ended; its result, if it has one.
    fn report(ended: Ended, report: TaskReport) -> Option<ToolResult> {
        match ended {
            Ok(Ok((result, _, decisions))) => {
                let (outcome, error_type) = match Refused::of_result(&result) {
                    Some(refused) => ("refused", Some(refusal_type(&refused))),
                    None => match result.error_type() {
                        Some(kind) => ("error", Some(kind.as_str())),
                        None => ("ok", None),
                    },
                };
                report.ended(None, decisions, outcome, error_type);
                Some(result)
            }
            Ok(Err(refused)) => {
                report.refused(refusal_type(&refused));
                None
            }
            Err(_) => {
                report.ended(None, Decisions::default(), "error", None);
                None
            }
        }
    }
}

/// How a task call's work ended: its result (structured or not) and the pipeline's
/// decisions, the gate's refusal, or a panic.
type Ended = Result<Result<(ToolResult, bool, Decisions), Refused>, tokio::task::JoinError>;

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
