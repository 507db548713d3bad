//! The tasks this process runs: each with a cancellation token that `tasks/cancel` fires,
//! the last progress its handler reported (`tasks/get` shows it as the status message
//! while the task works) and its exchange of input requests ([`Inputs`]). When the call
//! ends, how it ended goes to the task's record; the in-process entry goes with it.

use super::input::Inputs;
use crate::{CallObserver, Progress};
use parking_lot::Mutex;
use std::collections::HashMap;
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
    /// The input requests it waits on (`input_required`) and their answers.
    pub(crate) inputs: Inputs,
}

impl Running {
    /// A task about to run, stopped by `cancel`.
    pub(crate) fn new(cancel: CancellationToken) -> Arc<Self> {
        Arc::new(Self {
            cancel,
            requested: AtomicBool::new(false),
            progress: Mutex::new(None),
            inputs: Inputs::default(),
        })
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
    }
}

/// The tasks running in this process, by id.
#[derive(Default)]
pub(crate) struct Runner {
    running: Mutex<HashMap<String, Arc<Running>>>,
}

impl Runner {
    /// Tracks `running` as the task `id` (from its creation to its recorded end).
    pub(crate) fn insert(&self, id: &str, running: Arc<Running>) {
        self.running.lock().insert(id.to_string(), running);
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
