//! The Tasks extension (`io.modelcontextprotocol/tasks`, docs/mcp-server.md#tasks): a call
//! of a `task` tool by a client that declares the extension answers at once with a task
//! (`resultType: "task"`), runs in the background under its deadline, and is read with
//! `tasks/get`, stopped with `tasks/cancel`.
//!
//! Split so the protocol glue stays thin over a service that knows no transport:
//! - [`records`]: the task records in the store's backend (durable, with a TTL);
//! - [`round`], [`round_store`]: a task's input requests and the responses taken, in its
//!   record (`input_required`, `tasks/update`);
//! - [`runner`]: the tasks running in this process (cancellation, last progress);
//! - [`input`]: a running handler's wait for its input round;
//! - [`watch`]: the one watcher per process that carries a cancellation or an answer
//!   recorded through another process (sharing the store) to the handler running here;
//! - [`asker`]: the asker of a call made as a task (the request's rounds before the task
//!   exists, the task's input requests after);
//! - [`call`]: a `tools/call` becoming a task (the gate, `prepare`, the handover, how it
//!   ended); [`report`]: its request span and audit line;
//! - this file: [`TaskService`], which answers `tasks/get`, `tasks/update`, `tasks/cancel`
//!   in rmcp's types, whatever the revision or transport that carried them.

mod asker;
mod call;
mod clock;
mod input;
pub(crate) mod principal;
mod records;
mod report;
mod round;
mod round_store;
mod runner;
mod watch;

use crate::Host;
use clock::iso8601;
use records::{TaskRecord, TaskRecords};
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CreateTaskResult, DetailedTask, GetTaskResult, InputResponses, Task, TaskPayload, TaskStatus,
};
use round::{StoredRound, Taken};
use runner::Runner;
use std::sync::Arc;
use std::time::Duration;
use watch::Watcher;

/// Default `[serve] task_ttl_ms`: an hour.
pub(crate) const DEFAULT_TASK_TTL_MS: u64 = 3_600_000;
/// The polling interval suggested to clients.
const POLL_INTERVAL_MS: u64 = 500;

/// Tasks of one server: their records and the ones running here.
pub(crate) struct TaskService {
    records: Arc<TaskRecords>,
    runner: Arc<Runner>,
    watcher: Watcher,
}

impl TaskService {
    /// The tasks of a server of `host` (records in its store's task area, kept for
    /// `[serve] task_ttl_ms`).
    pub(crate) fn new(host: &Host) -> Self {
        let ttl_ms = host
            .config()
            .config
            .serve
            .task_ttl_ms
            .unwrap_or(DEFAULT_TASK_TTL_MS);
        Self {
            records: Arc::new(TaskRecords::new(
                host.task_records(),
                Duration::from_millis(ttl_ms),
            )),
            runner: Arc::new(Runner::default()),
            watcher: Watcher::default(),
        }
    }

    /// `tasks/get` from `principal`: the task with its result or error once it has ended.
    pub(crate) async fn get(&self, id: String, principal: &str) -> Result<GetTaskResult, McpError> {
        let records = self.records.clone();
        let found = {
            let id = id.clone();
            tokio::task::spawn_blocking(move || records.get(&id)).await
        };
        let mut record = found
            .map_err(|e| internal(format!("reading task {id} failed: {e}")))?
            .map_err(|e| internal(format!("reading task {id} failed: {e}")))?
            .filter(|record| record.owner == principal)
            .ok_or_else(|| not_found(&id))?;
        let mut waiting = None;
        if record.status == TaskStatus::Working {
            if let Some(progress) = self.runner.progress(&id) {
                record.message = Some(progress);
            }
            // From the record: the task may run in another process sharing the store.
            waiting = record
                .round
                .take()
                .filter(|round| !round.complete())
                .map(|round| round.outstanding);
        }
        let mut task = detailed(&id, record);
        if let Some(input_requests) = waiting {
            task = DetailedTask::new(task.task, TaskPayload::InputRequired { input_requests });
        }
        Ok(GetTaskResult::new(task))
    }

    /// `tasks/cancel`: records the task cancelled unless it has ended, and stops it if it
    /// runs here (a task running in another process sharing the store is stopped by that
    /// process's watcher).
    pub(crate) async fn cancel(&self, id: String, principal: &str) -> Result<(), McpError> {
        // Another principal's task is as unknown as a missing one.
        self.get(id.clone(), principal).await?;
        let records = self.records.clone();
        let known = {
            let id = id.clone();
            tokio::task::spawn_blocking(move || records.cancel(&id)).await
        };
        let known = known
            .map_err(|e| internal(format!("cancelling task {id} failed: {e}")))?
            .map_err(|e| internal(format!("cancelling task {id} failed: {e}")))?;
        if !known {
            return Err(not_found(&id));
        }
        self.runner.cancel(&id);
        Ok(())
    }

    /// `tasks/update`: input responses for a task waiting on input requests, wherever its
    /// handler runs (the responses go to its record). Responses to keys that are not
    /// outstanding are ignored, as the extension says; an update for a task that waits on
    /// nothing is refused (`-32602`), and so is one for an unknown task.
    pub(crate) async fn update(
        &self,
        id: String,
        responses: InputResponses,
        principal: &str,
    ) -> Result<(), McpError> {
        let task = self.get(id.clone(), principal).await?;
        let status = task.task.status();
        let records = self.records.clone();
        let taken = {
            let id = id.clone();
            tokio::task::spawn_blocking(move || records.answer(&id, responses)).await
        };
        let taken = match taken {
            Ok(Ok(taken)) => taken,
            // A client's responses too large to keep are its own problem, said so.
            Ok(Err(crate::StoreError::ValueTooLarge { size, limit })) => {
                return Err(McpError::invalid_params(
                    format!(
                        "task {id}: the input responses cannot be kept ({size} bytes with the task, over [store] max_value_bytes {limit})"
                    ),
                    None,
                ));
            }
            Ok(Err(e)) => return Err(internal(format!("updating task {id} failed: {e}"))),
            Err(e) => return Err(internal(format!("updating task {id} failed: {e}"))),
        };
        match taken {
            Taken::NothingWaits => Err(McpError::invalid_params(
                format!(
                    "task {id} is not waiting for input (status {}): there is no input request for these responses",
                    status_name(status)
                ),
                None,
            )),
            Taken::Some { taken, round } => {
                tracing::debug!("task {id}: {taken} input response(s) taken");
                // Here at once; a task of another process gets them from its watcher.
                if let Some(running) = self.runner.get(&id) {
                    watch::deliver(&self.records, &id, &running, round).await;
                }
                Ok(())
            }
        }
    }
}

/// A status as the wire writes it.
fn status_name(status: TaskStatus) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{status:?}"))
}

/// The wire form of the task `id` as recorded.
fn detailed(id: &str, record: TaskRecord) -> DetailedTask {
    let payload = match record.status {
        TaskStatus::Completed => TaskPayload::Completed {
            result: record.result.clone().unwrap_or_default(),
        },
        TaskStatus::Failed => TaskPayload::Failed {
            error: record
                .error
                .clone()
                .unwrap_or_else(|| records::rpc_error(records::INTERNAL_ERROR, "the task failed")),
        },
        TaskStatus::Cancelled => TaskPayload::Cancelled,
        _ => TaskPayload::Working,
    };
    DetailedTask::new(task(id, &record), payload)
}

/// The `Task` fields of the record `id`.
fn task(id: &str, record: &TaskRecord) -> Task {
    let mut task = Task::new(
        id,
        record.status,
        iso8601(record.created_ms),
        iso8601(record.updated_ms),
    )
    .with_ttl_ms(record.ttl_ms)
    .with_poll_interval_ms(POLL_INTERVAL_MS);
    if let Some(message) = &record.message {
        task = task.with_status_message(message.clone());
    }
    task
}

/// The answer to a task-augmented call: the new task.
fn created(id: &str, record: &TaskRecord) -> CreateTaskResult {
    CreateTaskResult::new(task(id, record))
}

/// The extension's answer for an unknown or expired task id (`-32602`).
fn not_found(id: &str) -> McpError {
    McpError::invalid_params(
        format!("Failed to retrieve task: Task not found (no task {id:?}, or it expired)"),
        None,
    )
}

fn internal(message: String) -> McpError {
    McpError::internal_error(message, None)
}
