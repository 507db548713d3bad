//! The asker of a call made as a task. Until the handover (the gate, the approval and the
//! tool's `prepare`) no task exists and the request is still open: its input requests are
//! the request's own (multi-round `input_required` results on 2026-07-28, server→client
//! requests on a 2025-11-25 session). After the handover the client holds only a task id:
//! a request puts the task in `input_required` (the round is written to the task's record),
//! `tasks/get` shows it and `tasks/update` answers it, through any server sharing the
//! store, on both revisions (the extension's way; a session may be gone by then). The
//! handler is still running meanwhile, so nothing is replayed inside a task.

use super::input::{Answers, AskError};
use super::records::TaskRecords;
use super::runner::Running;
use crate::mcp::server::input::session::declares;
use crate::mcp::server::input::wire;
use crate::{AskFuture, Asker, Capability, InputAnswer, InputRequest};
use rmcp::model::{ClientCapabilities, InputRequests};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Asks the request's way before the handover, the task's way after it.
pub(crate) struct TaskAsker {
    /// The request's asker (`None`: nobody to ask before the task exists).
    request: Option<Arc<dyn Asker>>,
    /// The task's entry, whose [`Inputs`](super::input::Inputs) wait for its answers.
    running: Arc<Running>,
    /// What the client declared (the request's `_meta`, or the session's `initialize`).
    declared: Option<ClientCapabilities>,
    /// Set once the task exists.
    handed_over: AtomicBool,
}

impl TaskAsker {
    /// The asker of the call that becomes the task `running`.
    pub(crate) fn new(
        request: Option<Arc<dyn Asker>>,
        running: Arc<Running>,
        declared: Option<ClientCapabilities>,
    ) -> Self {
        Self {
            request,
            running,
            declared,
            handed_over: AtomicBool::new(false),
        }
    }

    /// The task exists: from now on requests go to it.
    pub(crate) fn hand_over(&self) {
        self.handed_over.store(true, Ordering::Release);
    }

    /// One round asked of the task: `input_required` until `tasks/update` answers it all.
    async fn ask_task(&self, requests: Vec<InputRequest>) -> Vec<InputAnswer> {
        let mut wire_requests = InputRequests::new();
        let mut unsendable = Vec::with_capacity(requests.len());
        for request in &requests {
            match wire::request(&request.kind) {
                Ok(sent) => {
                    wire_requests.insert(request.key.clone(), sent);
                    unsendable.push(None);
                }
                // What cannot be sent fails at once, as on a session.
                Err(message) => unsendable.push(Some(message)),
            }
        }
        let answers = match wait_for_answers(&self.running, wire_requests).await {
            Ok(answers) => answers,
            Err(why) => {
                let message = format!("the task's input request failed: {why}");
                return vec![InputAnswer::Failed { message }; requests.len()];
            }
        };
        requests
            .iter()
            .zip(unsendable)
            .map(|(request, unsendable)| {
                if let Some(message) = unsendable {
                    return InputAnswer::Failed { message };
                }
                match answers.get(&request.key) {
                    // The client's response is untrusted input: a bad one fails the request.
                    Some(response) => {
                        wire::answer(&request.kind, response.clone()).unwrap_or_else(|e| {
                            InputAnswer::Failed {
                                message: format!(
                                    "the response to input request '{}' is {e}",
                                    request.key
                                ),
                            }
                        })
                    }
                    None => InputAnswer::unanswered(&request.kind, "no response was given"),
                }
            })
            .collect()
    }
}

impl Asker for TaskAsker {
    fn ask(&self, request: InputRequest) -> AskFuture<'_> {
        let round = self.ask_round(vec![request]);
        Box::pin(async move { round.await.pop().unwrap_or(InputAnswer::Cancel) })
    }

    fn ask_round(&self, requests: Vec<InputRequest>) -> AskFuture<'_, Vec<InputAnswer>> {
        if self.handed_over.load(Ordering::Acquire) {
            return Box::pin(self.ask_task(requests));
        }
        match &self.request {
            Some(asker) => asker.ask_round(requests),
            None => Box::pin(std::future::ready(
                requests
                    .iter()
                    .map(|r| InputAnswer::unanswered(&r.kind, "nobody can answer it here"))
                    .collect(),
            )),
        }
    }

    fn supports(&self, capability: Capability) -> bool {
        self.declared
            .as_ref()
            .is_some_and(|declared| declares(declared, capability))
    }
}

/// Asks `requests` as one round of the task `running` and waits until each has a response
/// (taken by `tasks/update` through any server, delivered by the watcher or the update
/// itself); dropping the future withdraws the round.
async fn wait_for_answers(running: &Running, requests: InputRequests) -> Result<Answers, AskError> {
    if requests.is_empty() {
        return Ok(Answers::new());
    }
    // Asked only after the handover, when the task exists.
    let Some((id, records)) = running.task().cloned() else {
        return Err(AskError::Closed);
    };
    let (n, answered) = running.inputs.open(&requests)?;
    let mut withdraw = Withdraw {
        running,
        task: Some((id.clone(), records.clone())),
        n,
    };
    let opened = tokio::task::spawn_blocking(move || records.open_round(&id, n, requests)).await;
    match opened {
        Ok(Ok(true)) => {}
        // The task ended (cancelled) before its round was recorded.
        Ok(Ok(false)) => return Err(AskError::Closed),
        Ok(Err(e)) => return Err(AskError::NotRecorded(e.to_string())),
        Err(e) => return Err(AskError::NotRecorded(e.to_string())),
    }
    let answers = answered.await.map_err(|_| AskError::Closed);
    if answers.is_ok() {
        // Delivered: the deliverer takes the round out of the record.
        withdraw.task = None;
    }
    answers
}

/// Withdraws round `n` when its asker stops waiting (its handler ended): the task no longer
/// shows requests nobody waits for.
struct Withdraw<'a> {
    running: &'a Running,
    /// The record to take the round out of (`None`: nothing to take out).
    task: Option<(String, Arc<TaskRecords>)>,
    n: u64,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.running.inputs.withdraw(self.n);
        let Some((id, records)) = self.task.take() else {
            return;
        };
        let n = self.n;
        // Best effort, off this thread: the task's end clears the round anyway.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn_blocking(move || {
                if let Err(e) = records.close_round(&id, n) {
                    tracing::debug!("task {id}: withdrawn round not cleared: {e}");
                }
            });
        }
    }
}
