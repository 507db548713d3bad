//! The asker of a 2026-07-28 call (multi-round): a request whose answer the call's sealed
//! state recorded gets it at once; a request without one is noted as pending and stops
//! the call (its cancellation token), which then answers `input_required` with the pending
//! requests and a new sealed state. The retry runs the handler again from the start and
//! every request made up to there gets its recorded answer (keys are stable between runs).

use super::session::declares;
use super::wire;
use crate::{AskFuture, Asker, Capability, InputAnswer, InputKind, InputRequest};
use parking_lot::Mutex;
use rmcp::model::ClientCapabilities;
use std::collections::BTreeMap;
use tokio_util::sync::CancellationToken;

/// Answers from the recorded answers; stops the call at the first request it lacks.
pub(crate) struct ReplayAsker {
    recorded: BTreeMap<String, InputAnswer>,
    declared: Option<ClientCapabilities>,
    pending: Mutex<BTreeMap<String, InputKind>>,
    stop: CancellationToken,
}

impl ReplayAsker {
    /// Answers from `recorded` for a client that declared `declared` (this request's
    /// `_meta` capabilities); a missing answer cancels `stop` (the call's token).
    pub(crate) fn new(
        recorded: BTreeMap<String, InputAnswer>,
        declared: Option<ClientCapabilities>,
        stop: CancellationToken,
    ) -> Self {
        Self {
            recorded,
            declared,
            pending: Mutex::new(BTreeMap::new()),
            stop,
        }
    }

    /// The requests the call is waiting for (empty: it did not stop for input).
    pub(crate) fn take_pending(&self) -> BTreeMap<String, InputKind> {
        std::mem::take(&mut *self.pending.lock())
    }

    /// The answers recorded so far.
    pub(crate) fn recorded(&self) -> &BTreeMap<String, InputAnswer> {
        &self.recorded
    }
}

impl Asker for ReplayAsker {
    fn ask(&self, request: InputRequest) -> AskFuture<'_> {
        let round = self.ask_round(vec![request]);
        Box::pin(async move { round.await.pop().unwrap_or(InputAnswer::Cancel) })
    }

    fn ask_round(&self, requests: Vec<InputRequest>) -> AskFuture<'_, Vec<InputAnswer>> {
        let mut answers = Vec::with_capacity(requests.len());
        let mut missing = Vec::new();
        for request in requests {
            // A roots request is answered by the roots the call already has (a tool that
            // `needs` roots got them in its first round).
            let recorded = self.recorded.get(&request.key).or_else(|| {
                matches!(request.kind, InputKind::Roots)
                    .then(|| self.recorded.get(super::ROOTS_KEY))
                    .flatten()
            });
            match recorded {
                Some(answer) => answers.push(answer.clone()),
                None => match wire::request(&request.kind) {
                    Ok(_) => {
                        answers.push(InputAnswer::Cancel);
                        missing.push(request);
                    }
                    // What cannot be sent fails at once, as on a session.
                    Err(message) => answers.push(InputAnswer::Failed { message }),
                },
            }
        }
        if missing.is_empty() {
            return Box::pin(std::future::ready(answers));
        }
        self.pending
            .lock()
            .extend(missing.into_iter().map(|r| (r.key, r.kind)));
        // The call ends here; the round's requests go to the client.
        self.stop.cancel();
        Box::pin(std::future::pending())
    }

    fn supports(&self, capability: Capability) -> bool {
        self.declared
            .as_ref()
            .is_some_and(|declared| declares(declared, capability))
    }
}
