//! The tasks this process runs: each with a cancellation token that `tasks/cancel` fires
//! (here, or through the watcher when another process recorded the cancellation), the
//! last progress its handler reported (`tasks/get` shows it as the status message while
//! the task works) and its wait for input ([`Inputs`]). When the call ends, how it ended
//! goes to the task's record; the in-process entry goes with it.

use super::input::Inputs;
use super::records::TaskRecords;
use crate::{CallObserver, Progress};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use tokio::sync::Notify;
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
    /// Set by a progress report, cleared once the watcher wrote it to the record (where
    /// other processes sharing the store read it).
    progress_unsaved: AtomicBool,
    /// Its wait for input (`input_required`).
    pub(crate) inputs: Inputs,
    /// Its id and records, once the task exists (its input rounds are written there).
    task: OnceLock<(String, Arc<TaskRecords>)>,
}

impl Running {
    /// A task about to run, stopped by `cancel`.
    pub(crate) fn new(cancel: CancellationToken) -> Arc<Self> {
        Arc::new(Self {
            cancel,
            requested: AtomicBool::new(false),
            progress: Mutex::new(None),
            progress_unsaved: AtomicBool::new(false),
            inputs: Inputs::default(),
            task: OnceLock::new(),
        })
    }

    /// The call became the task `id`, recorded in `records`.
    pub(crate) fn became(&self, id: &str, records: Arc<TaskRecords>) {
        let _ = self.task.set((id.to_string(), records));
    }

    /// The task's id and records (`None` before it exists).
    pub(crate) fn task(&self) -> Option<&(String, Arc<TaskRecords>)> {
        self.task.get()
    }

    /// The last progress report if it has not been written to the record yet (it then
    /// counts as written).
    pub(crate) fn unsaved_progress(&self) -> Option<String> {
        if !self.progress_unsaved.swap(false, Ordering::AcqRel) {
            return None;
        }
        self.progress.lock().clone()
    }

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
        self.progress_unsaved.store(true, Ordering::Release);
    }
}

/// The tasks running in this process, by id.
#[derive(Default)]
pub(crate) struct Runner {
    running: Mutex<HashMap<String, Arc<Running>>>,
    /// Wakes the watcher, which sleeps while nothing runs.
    pub(crate) added: Arc<Notify>,
}

impl Runner {
    /// Tracks `running` as the task `id` (from its creation to its recorded end).
    pub(crate) fn insert(&self, id: &str, running: Arc<Running>) {
        self.running.lock().insert(id.to_string(), running);
        self.added.notify_one();
    }

    /// The ids of the tasks running here.
    pub(crate) fn ids(&self) -> Vec<String> {
        self.running.lock().keys().cloned().collect()
    }

    /// Forgets the task `id` (its end is recorded).
    pub(crate) fn remove(&self, id: &str) {
        self.running.lock().remove(id);
    }

    /// The task `id` if it runs here.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<Running>> {
        self.running.lock().get(id).cloned()
    }

    /// Stops the task `id` if it runs here; `false` when it does not.
    pub(crate) fn cancel(&self, id: &str) -> bool {
        let Some(running) = self.get(id) else {
            return false;
        };
        running.requested.store(true, Ordering::Release);
        running.cancel.cancel();
        running.inputs.close();
        true
    }

    /// The last progress the running task `id` reported, if it runs here and reported any.
    pub(crate) fn progress(&self, id: &str) -> Option<String> {
        let running = self.get(id)?;
        running.progress.lock().clone()
    }
}
