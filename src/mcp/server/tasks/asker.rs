//! The asker of a call made as a task. Until the handover (the gate, the approval and the
//! tool's `prepare`) no task exists and the request is still open: its input requests are
//! the request's own (multi-round `input_required` results on 2026-07-28, server→client
//! requests on a 2025-11-25 session). After the handover the client holds only a task id:
//! a request puts the task in `input_required` ([`Inputs::ask`]), `tasks/get` shows it and
//! `tasks/update` answers it, on both revisions (the extension's way; a session may be gone
//! by then). The handler is still running meanwhile, so nothing is replayed inside a task.

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
    /// The task's entry, whose [`Inputs`](super::input::Inputs) hold its input requests.
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
        let answers = match self.running.inputs.ask(wire_requests).await {
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
