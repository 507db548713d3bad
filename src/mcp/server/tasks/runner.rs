//! The tasks this process runs: each in a tokio task of its own, with a cancellation token
//! that `tasks/cancel` fires and the last progress its handler reported (`tasks/get`
//! shows it as the status message while the task works). When the call ends, how it ended
//! goes to the task's record; the in-process entry goes with it.

use super::records::{TaskEnd, TaskRecords};
use crate::{CallObserver, Progress};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio_util::sync::CancellationToken;

/// One running task.
pub(crate) struct Running {
    /// Stops the call.
    pub(crate) cancel: CancellationToken,
    /// Set by `tasks/cancel` before it fires `cancel`: the call's end is then `cancelled`,
    /// not a failure of the host.
    requested: AtomicBool,
    /// The handler's last progress report, as a status message.
    progress: Mutex<Option<String>>,
}

impl Running {
    /// Whether `tasks/cancel` stopped the call.
    pub(crate) fn cancel_requested(&self) -> bool {
        self.requested.load(Ordering::Acquire)
    }
}

/// Reports a task's progress into its [`Running`] entry (a task has no request to send
/// `notifications/progress` on).
impl CallObserver for Running {
    fn progress(&self, progress: Progress) {
        let done = match progress.total {
            Some(total) => format!("{}/{}", progress.done, total),
            None => progress.done.to_string(),
        };
        let text = match progress.message {
            Some(message) => format!("{done}: {message}"),
            None => done,
        };
        *self.progress.lock() = Some(text);
    }
}

/// The tasks running in this process, by id.
#[derive(Default)]
pub(crate) struct Runner {
    running: Mutex<HashMap<String, Arc<Running>>>,
}

impl Runner {
    /// Runs `work` for the task `id` in the background; `work` gets the task's entry (its
    /// token stops the call; it observes progress) and its end goes to `records`.
    pub(crate) fn spawn<F>(
        self: &Arc<Self>,
        records: Arc<TaskRecords>,
        id: String,
        cancel: CancellationToken,
        work: impl FnOnce(Arc<Running>) -> F,
    ) where
        F: Future<Output = TaskEnd> + Send + 'static,
    {
        let running = Arc::new(Running {
            cancel,
            requested: AtomicBool::new(false),
            progress: Mutex::new(None),
        });
        self.running.lock().insert(id.clone(), running.clone());
        let work = work(running);
        let runner = self.clone();
        tokio::spawn(async move {
            let end = work.await;
            // The record first, then the entry: a `tasks/get` in between still finds the
            // task running here, never a `working` record with no runner.
            let records_id = id.clone();
            let stored =
                tokio::task::spawn_blocking(move || records.finish(&records_id, end)).await;
            match stored {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!("the end of task {id} was not recorded: {e}"),
                Err(e) => tracing::warn!("the end of task {id} was not recorded: {e}"),
            }
            runner.running.lock().remove(&id);
        });
    }

    /// Stops the task `id` if it runs here; `false` when it does not.
    pub(crate) fn cancel(&self, id: &str) -> bool {
        let Some(running) = self.running.lock().get(id).cloned() else {
            return false;
        };
        running.requested.store(true, Ordering::Release);
        running.cancel.cancel();
        true
    }

    /// The last progress the running task `id` reported, if it runs here and reported any.
    pub(crate) fn progress(&self, id: &str) -> Option<String> {
        let running = self.running.lock().get(id).cloned()?;
        running.progress.lock().clone()
    }
}
