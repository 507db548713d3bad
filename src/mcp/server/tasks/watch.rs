//! The watcher: what makes a task run in one process answerable through every process
//! sharing its store. `tasks/cancel` and `tasks/update` through another process change
//! only the task's record; one watcher per task service (one per `serve` process, not
//! one per task) reads the records of the tasks running here every [`INTERVAL`] while
//! any runs, cancels the handler of a task recorded cancelled, hands a complete input
//! round to the handler waiting on it, and writes a handler's new progress report to its
//! record (so `tasks/get` through another process shows it too). It polls rather than
//! listens so that it works the same on every store backend; with no task running it
//! sleeps until one starts.

use super::StoredRound;
use super::records::{TaskRecord, TaskRecords};
use super::runner::{Runner, Running};
use rmcp::model::TaskStatus;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;
use tokio_util::sync::{CancellationToken, DropGuard};

/// How often the records of running tasks are read: how long a cancellation or an answer
/// given through another process takes at most to reach the handler (plus a store read).
pub(crate) const INTERVAL: Duration = Duration::from_millis(100);

/// The watcher of one task service; it stops when the service is dropped.
#[derive(Default)]
pub(crate) struct Watcher {
    started: OnceLock<DropGuard>,
}

impl Watcher {
    /// Starts the watcher of `runner`'s tasks unless it runs (called where a task starts,
    /// inside the server's runtime).
    pub(crate) fn ensure(&self, runner: &Arc<Runner>, records: &Arc<TaskRecords>) {
        self.started.get_or_init(|| {
            let stop = CancellationToken::new();
            tokio::spawn(watch(Arc::downgrade(runner), records.clone(), stop.clone()));
            stop.drop_guard()
        });
    }
}

/// The watcher's loop: until `stop`, or until the runner is gone.
async fn watch(runner: Weak<Runner>, records: Arc<TaskRecords>, stop: CancellationToken) {
    loop {
        let Some(strong) = runner.upgrade() else {
            return;
        };
        let ids = strong.ids();
        if ids.is_empty() {
            let added = strong.added.clone();
            drop(strong);
            tokio::select! {
                () = added.notified() => continue,
                () = stop.cancelled() => return,
            }
        }
        drop(strong);
        let read = {
            let records = records.clone();
            tokio::task::spawn_blocking(move || {
                ids.into_iter()
                    .map(|id| {
                        let record = records.get(&id);
                        (id, record)
                    })
                    .collect::<Vec<_>>()
            })
            .await
        };
        match read {
            Ok(found) => {
                for (id, record) in found {
                    let Some(strong) = runner.upgrade() else {
                        return;
                    };
                    match record {
                        Ok(Some(record)) => act(&strong, &records, &id, record).await,
                        Ok(None) => {}
                        // A store that cannot be read now is read again next time.
                        Err(e) => tracing::debug!("task {id}: record not read: {e}"),
                    }
                }
            }
            Err(e) => tracing::debug!("task records not read: {e}"),
        }
        tokio::select! {
            () = tokio::time::sleep(INTERVAL) => {}
            () = stop.cancelled() => return,
        }
    }
}

/// Brings what the record of the task `id` says to its handler, if it runs here.
async fn act(runner: &Runner, records: &Arc<TaskRecords>, id: &str, record: TaskRecord) {
    let Some(running) = runner.get(id) else {
        return;
    };
    if record.status == TaskStatus::Cancelled {
        if !running.cancel_requested() && runner.cancel(id) {
            tracing::debug!("task {id}: cancelled through another server");
        }
        return;
    }
    if let Some(round) = record.round {
        deliver(records, id, &running, round).await;
    }
    if let Some(progress) = running.unsaved_progress() {
        save_progress(records, id, progress).await;
    }
}

/// Hands the answers of `round`, once complete, to the handler of the task `id` waiting
/// on it, then takes the round out of the record. Whoever sees the complete round first
/// (the `tasks/update` of this process, or the watcher) delivers it; the other finds the
/// handler waiting on no such round and does nothing.
pub(crate) async fn deliver(
    records: &Arc<TaskRecords>,
    id: &str,
    running: &Running,
    round: StoredRound,
) {
    if !round.complete() {
        return;
    }
    let n = round.n;
    if !running.inputs.deliver(n, round.answered) {
        return;
    }
    let closed = {
        let (records, id) = (records.clone(), id.to_string());
        tokio::task::spawn_blocking(move || records.close_round(&id, n)).await
    };
    match closed {
        Ok(Ok(())) => {}
        // Left in the record, a complete round shows nothing and takes no update; the
        // handler's next round or its end replaces it.
        Ok(Err(e)) => tracing::debug!("task {id}: answered round not cleared: {e}"),
        Err(e) => tracing::debug!("task {id}: answered round not cleared: {e}"),
    }
}

/// Writes the running task `id`'s last progress report to its record.
async fn save_progress(records: &Arc<TaskRecords>, id: &str, progress: String) {
    let saved = {
        let (records, id) = (records.clone(), id.to_string());
        tokio::task::spawn_blocking(move || records.note_progress(&id, progress)).await
    };
    match saved {
        Ok(Ok(())) => {}
        // Only other processes miss it; this one shows its own.
        Ok(Err(e)) => tracing::debug!("task {id}: progress not recorded: {e}"),
        Err(e) => tracing::debug!("task {id}: progress not recorded: {e}"),
    }
}
