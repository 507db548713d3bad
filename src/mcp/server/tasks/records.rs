//! Task records: one JSON value per task under `task/<id>` in the store's task area (a
//! namespace no tool reaches), so a finished task's result outlives the process that ran
//! it and every process sharing the store file can answer `tasks/get` for it.
//!
//! A record is kept `ttl` from its creation (`[serve] task_ttl_ms`); an expired one reads
//! as missing and is deleted when read, and on every [`SWEEP_EVERY`]th creation. A record
//! still `working` past its `deadline_ms` was left by a process that stopped before the
//! task ended (nothing else can leave it so: every task runs under its deadline); it reads
//! as `failed`.

use super::clock::now_ms;
use super::round::StoredRound;
use crate::{Store, StoreError};
use rmcp::model::{JsonObject, TaskStatus};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Creations between two sweeps of expired records.
const SWEEP_EVERY: u64 = 64;
/// Key prefix of task records.
const PREFIX: &str = "task/";
/// A task id: 128 random bits as 32 lowercase hex digits.
const ID_LEN: usize = 32;

/// One task as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TaskRecord {
    /// The tool called.
    pub(crate) tool: String,
    /// The principal that created it (the only one that may read or change it).
    #[serde(default)]
    pub(crate) owner: String,
    /// Where it is (`working`, or an end).
    pub(crate) status: TaskStatus,
    /// When it was created (ms since the epoch).
    pub(crate) created_ms: u64,
    /// When its record last changed.
    pub(crate) updated_ms: u64,
    /// How long it is kept from its creation.
    pub(crate) ttl_ms: u64,
    /// Past this, a task still `working` has lost the process that ran it.
    pub(crate) deadline_ms: u64,
    /// What the status means for a person (why it failed, the last progress).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<String>,
    /// The `CallToolResult` of a completed task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) result: Option<JsonObject>,
    /// The JSON-RPC error of a failed task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<JsonObject>,
    /// The input requests its handler waits on, and the responses taken so far: in the
    /// record, so every process sharing the store shows and answers them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) round: Option<StoredRound>,
}

/// How a task ended.
#[derive(Debug)]
pub(crate) enum TaskEnd {
    /// The call answered: its `CallToolResult` (a tool error included).
    Completed(JsonObject),
    /// The host ended it (deadline, memory, shutdown): a JSON-RPC error.
    Failed {
        /// What a person reads.
        message: String,
        /// The error object.
        error: JsonObject,
    },
    /// `tasks/cancel` stopped it.
    Cancelled,
}

/// The task records of one server.
pub(crate) struct TaskRecords {
    store: Store,
    ttl: Duration,
    created: AtomicU64,
}

impl TaskRecords {
    /// Records in `store` (the task area), each kept `ttl`.
    pub(crate) fn new(store: Store, ttl: Duration) -> Self {
        Self {
            store,
            ttl,
            created: AtomicU64::new(0),
        }
    }

    /// Stores a new `working` task of `tool` whose handler must have ended by `deadline`
    /// from now; returns its id once the record is committed (a `tasks/get` then finds it).
    pub(crate) fn create(
        &self,
        tool: &str,
        owner: &str,
        deadline: Duration,
    ) -> Result<(String, TaskRecord), StoreError> {
        if self
            .created
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(SWEEP_EVERY)
        {
            self.sweep();
        }
        // No randomness, no task: an id must never be predictable.
        let id = new_id().map_err(|e| {
            StoreError::Aborted(format!("no random bytes for a task id: {e}").into())
        })?;
        let now = now_ms();
        let record = TaskRecord {
            tool: tool.to_string(),
            owner: owner.to_string(),
            status: TaskStatus::Working,
            created_ms: now,
            updated_ms: now,
            ttl_ms: millis(self.ttl),
            deadline_ms: now.saturating_add(millis(deadline)),
            message: None,
            result: None,
            error: None,
            round: None,
        };
        self.store.set(&key(&id), &to_value(&record))?;
        Ok((id, record))
    }

    /// The task `id`, if it exists and has not expired (a lost `working` task reads as
    /// `failed`).
    pub(crate) fn get(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        if !is_id(id) {
            return Ok(None);
        }
        let Some(mut record) = self.read(id)? else {
            return Ok(None);
        };
        let now = now_ms();
        if expired(&record, now) {
            self.store.delete(&key(id))?;
            return Ok(None);
        }
        if lost(&record, now) {
            record.status = TaskStatus::Failed;
            record.message = Some(LOST.into());
            record.error = Some(rpc_error(INTERNAL_ERROR, LOST));
        }
        Ok(Some(record))
    }

    /// Records how the task `id` ended, unless it has ended already (a cancellation
    /// recorded first stands).
    pub(crate) fn finish(&self, id: &str, end: TaskEnd) -> Result<(), StoreError> {
        match self.record_end(id, end) {
            // A result over `[store] max_value_bytes` cannot be kept: the task fails, saying
            // why, rather than stay `working` until it reads as lost.
            Err(StoreError::ValueTooLarge { size, limit }) => {
                let message = format!(
                    "the task's result ({size} bytes as JSON) is over [store] max_value_bytes ({limit})"
                );
                let error = rpc_error(INTERNAL_ERROR, &message);
                self.record_end(id, TaskEnd::Failed { message, error })
            }
            other => other,
        }
    }

    fn record_end(&self, id: &str, end: TaskEnd) -> Result<(), StoreError> {
        self.change(id, move |record| {
            if record.status.is_terminal() {
                // A cancelled task whose handler has now ended (stopped by the
                // cancellation, or done just before it took effect) says so: a client, or
                // a process other than the one that ran it, then knows it does nothing more.
                if record.status == TaskStatus::Cancelled {
                    record.message = Some(STOPPED.into());
                    return true;
                }
                return false;
            }
            record.round = None;
            match end {
                TaskEnd::Completed(result) => {
                    record.status = TaskStatus::Completed;
                    record.result = Some(result);
                    // The last progress report was about the work, not its end.
                    record.message = None;
                }
                TaskEnd::Failed { message, error } => {
                    record.status = TaskStatus::Failed;
                    record.message = Some(message);
                    record.error = Some(error);
                }
                TaskEnd::Cancelled => {
                    record.status = TaskStatus::Cancelled;
                    record.message = Some(CANCELLED.into());
                }
            }
            true
        })
        .map(drop)
    }

    /// Writes the working task `id`'s last progress report as its status message, for the
    /// processes that do not run it.
    pub(crate) fn note_progress(&self, id: &str, message: String) -> Result<(), StoreError> {
        self.change(id, |record| {
            if record.status.is_terminal() {
                return false;
            }
            record.message = Some(message);
            true
        })
        .map(drop)
    }

    /// Marks the task `id` cancelled unless it has ended; `false` when there is no such
    /// task.
    pub(crate) fn cancel(&self, id: &str) -> Result<bool, StoreError> {
        if self.get(id)?.is_none() {
            return Ok(false);
        }
        self.change(id, |record| {
            if record.status.is_terminal() {
                return false;
            }
            record.round = None;
            record.status = TaskStatus::Cancelled;
            record.message = Some(CANCELLED.into());
            true
        })?;
        Ok(true)
    }

    /// Applies `edit` to the record `id` atomically (`edit` answers whether it changed
    /// anything: only a change moves `updated_ms`); `false` when there is no record.
    pub(super) fn change(
        &self,
        id: &str,
        edit: impl FnOnce(&mut TaskRecord) -> bool,
    ) -> Result<bool, StoreError> {
        if !is_id(id) {
            return Ok(false);
        }
        let mut found = false;
        let changed = self.store.update(&key(id), |old| {
            let Some(old) = old else {
                return Err(Box::new(Unchanged));
            };
            let mut record: TaskRecord = serde_json::from_value(old)?;
            found = true;
            if !edit(&mut record) {
                // Aborting writes nothing: a refused or idle change (an update answering
                // no request, a watcher's repeated close) costs no write transaction.
                return Err(Box::new(Unchanged));
            }
            record.updated_ms = now_ms();
            Ok(Some(to_value(&record)))
        });
        match changed {
            Ok(_) => Ok(found),
            Err(StoreError::Aborted(why)) if why.is::<Unchanged>() => Ok(found),
            Err(e) => Err(e),
        }
    }

    fn read(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        // A record this build cannot read (written by another version) counts as missing.
        Ok(self
            .store
            .get(&key(id))?
            .and_then(|value| serde_json::from_value(value).ok()))
    }

    /// Deletes expired records (best effort: a failure is logged, the next sweep retries).
    fn sweep(&self) {
        let now = now_ms();
        let keys = match self.store.list(PREFIX, usize::MAX) {
            Ok(keys) => keys,
            Err(e) => {
                tracing::debug!("task records not swept: {e}");
                return;
            }
        };
        for key in keys {
            let stale = match self.store.get(&key) {
                Ok(Some(value)) => serde_json::from_value::<TaskRecord>(value)
                    .map_or(true, |record| expired(&record, now)),
                Ok(None) => false,
                Err(_) => continue,
            };
            if stale && let Err(e) = self.store.delete(&key) {
                tracing::debug!("task record {key} not deleted: {e}");
            }
        }
    }
}

/// The edit of [`TaskRecords::change`] changed nothing: the update is abandoned.
#[derive(Debug, thiserror::Error)]
#[error("the task record is unchanged")]
struct Unchanged;

/// JSON-RPC's internal error.
pub(crate) const INTERNAL_ERROR: i32 = -32603;
/// Why a task left `working` without its process.
const LOST: &str = "the server running this task stopped before it finished";
/// The status message of a cancelled task.
const CANCELLED: &str = "cancelled by tasks/cancel";
/// The status message of a cancelled task once its handler has stopped.
const STOPPED: &str = "cancelled by tasks/cancel; its handler has stopped";

/// A JSON-RPC error object.
pub(crate) fn rpc_error(code: i32, message: &str) -> JsonObject {
    let mut error = JsonObject::new();
    error.insert("code".into(), code.into());
    error.insert("message".into(), message.into());
    error
}

/// Whether `record` is still `working` past its deadline: its process stopped.
pub(super) fn lost(record: &TaskRecord, now: u64) -> bool {
    !record.status.is_terminal() && now > record.deadline_ms
}

fn expired(record: &TaskRecord, now: u64) -> bool {
    now >= record.created_ms.saturating_add(record.ttl_ms)
}

fn key(id: &str) -> String {
    format!("{PREFIX}{id}")
}

fn to_value(record: &TaskRecord) -> serde_json::Value {
    serde_json::to_value(record).unwrap_or_default()
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Whether `id` has the shape of the ids this server makes (anything else is unknown
/// without a store read).
fn is_id(id: &str) -> bool {
    id.len() == ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// 128 bits from the kernel's generator: a task id is the only thing a client needs to
/// read a task, so it must not be guessable.
fn new_id() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; ID_LEN / 2];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(ttl: Duration) -> TaskRecords {
        let inner = std::sync::Arc::new(crate::store::StoreInner::memory(1 << 20));
        TaskRecords::new(Store::new(inner, crate::store::TASKS), ttl)
    }

    #[test]
    fn a_task_reads_back_until_it_expires() {
        let records = records(Duration::from_secs(60));
        let (id, created) = records
            .create("slow", "local", Duration::from_secs(30))
            .expect("stored");
        assert!(is_id(&id), "{id}");
        assert_eq!(records.get(&id).expect("read"), Some(created));
        let expired = self::records(Duration::ZERO);
        let (id, _) = expired
            .create("slow", "local", Duration::from_secs(30))
            .unwrap();
        assert_eq!(expired.get(&id).expect("read"), None);
    }

    #[test]
    fn a_cancellation_recorded_first_stands() {
        let records = records(Duration::from_secs(60));
        let (id, _) = records
            .create("slow", "local", Duration::from_secs(30))
            .unwrap();
        assert!(records.cancel(&id).unwrap());
        records
            .finish(&id, TaskEnd::Completed(JsonObject::new()))
            .unwrap();
        let record = records.get(&id).unwrap().unwrap();
        assert_eq!(record.status, TaskStatus::Cancelled);
        assert_eq!(record.result, None);
        // The handler's end after the cancellation is only told.
        assert_eq!(record.message.as_deref(), Some(STOPPED));
    }

    #[test]
    fn a_working_task_past_its_deadline_reads_as_failed() {
        let records = records(Duration::from_secs(60));
        let (id, _) = records.create("slow", "local", Duration::ZERO).unwrap();
        // The deadline is "now"; any later read is past it.
        let record = loop {
            let record = records.get(&id).unwrap().unwrap();
            if record.status != TaskStatus::Working {
                break record;
            }
        };
        assert_eq!(record.status, TaskStatus::Failed);
        assert_eq!(record.error.unwrap()["code"], INTERNAL_ERROR);
    }

    #[test]
    fn a_result_too_large_to_keep_fails_the_task_saying_why() {
        let inner = std::sync::Arc::new(crate::store::StoreInner::memory(600));
        let records = TaskRecords::new(
            Store::new(inner, crate::store::TASKS),
            Duration::from_secs(60),
        );
        let (id, _) = records
            .create("big", "local", Duration::from_secs(30))
            .unwrap();
        let mut result = JsonObject::new();
        result.insert("text".into(), "x".repeat(1000).into());
        records.finish(&id, TaskEnd::Completed(result)).unwrap();
        let record = records.get(&id).unwrap().unwrap();
        assert_eq!(record.status, TaskStatus::Failed);
        assert!(
            record
                .message
                .as_deref()
                .unwrap()
                .contains("max_value_bytes"),
            "{record:?}"
        );
    }

    #[test]
    fn expired_records_are_swept_at_creations_without_being_read() {
        let records = records(Duration::ZERO);
        for _ in 0..SWEEP_EVERY {
            records.create("quick", "local", Duration::ZERO).unwrap();
        }
        let stored = |records: &TaskRecords| records.store.list(PREFIX, usize::MAX).unwrap();
        // The first creation swept an empty area; these have expired since.
        assert_eq!(stored(&records).len(), SWEEP_EVERY as usize);
        records.create("quick", "local", Duration::ZERO).unwrap();
        assert_eq!(stored(&records).len(), 1);
    }

    #[test]
    fn ids_of_other_shapes_are_unknown() {
        let records = records(Duration::from_secs(60));
        for id in [
            "",
            "../x",
            "ABCDEF0123456789ABCDEF0123456789",
            &"a".repeat(600),
        ] {
            assert_eq!(records.get(id).unwrap(), None, "{id}");
        }
        assert!(!records.cancel("nope").unwrap());
    }
}
