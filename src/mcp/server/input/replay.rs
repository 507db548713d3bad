//! The asker of a 2026-07-28 call (multi-round): a request whose answer the call's sealed
//! state recorded gets it at once; a request without one is noted as pending and stops
//! the call (its cancellation token), which then answers `input_required` with the pending
//! requests and a new sealed state. The retry runs the handler again from the start and
//! every request made up to there gets its recorded answer (keys are stable between runs).
//!
//! A response the client offered without being asked (no state yet, or a key the last
//! round did not ask) answers a request of that key once the handler makes it, checked
//! against the request then; never the approval gate's question, which only a sealed round
//! answers (the user was shown it).

use super::session::declares;
use super::{Answers, wire};
use crate::{AskFuture, Asker, Capability, InputAnswer, InputKind, InputRequest};
use parking_lot::Mutex;
use rmcp::model::ClientCapabilities;
use std::collections::BTreeMap;
use tokio_util::sync::CancellationToken;

/// Answers from the recorded answers; stops the call at the first request it lacks.
pub(crate) struct ReplayAsker {
    recorded: BTreeMap<String, InputAnswer>,
    offered: BTreeMap<String, serde_json::Value>,
    declared: Option<ClientCapabilities>,
    pending: Mutex<BTreeMap<String, InputKind>>,
    /// Offered answers the call used (recorded in the next state).
    used: Mutex<BTreeMap<String, InputAnswer>>,
    stop: CancellationToken,
}

/// How the approval gate's keys end (`toolhost/approval`, after a `ctx.call` prefix).
const APPROVAL_SUFFIX: &str = "toolhost/approval";

impl ReplayAsker {
    /// Answers from `recorded` for a client that declared `declared` (this request's
    /// `_meta` capabilities); a missing answer cancels `stop` (the call's token).
    pub(crate) fn new(
        answers: Answers,
        declared: Option<ClientCapabilities>,
        stop: CancellationToken,
    ) -> Self {
        Self {
            recorded: answers.recorded,
            offered: answers.offered,
            declared,
            pending: Mutex::new(BTreeMap::new()),
            used: Mutex::new(BTreeMap::new()),
            stop,
        }
    }

    /// The requests the call is waiting for (empty: it did not stop for input).
    pub(crate) fn take_pending(&self) -> BTreeMap<String, InputKind> {
        std::mem::take(&mut *self.pending.lock())
    }

    /// The answers recorded so far, with the offered ones the call used.
    pub(crate) fn recorded(&self) -> BTreeMap<String, InputAnswer> {
        let mut all = self.recorded.clone();
        all.extend(self.used.lock().iter().map(|(k, v)| (k.clone(), v.clone())));
        all
    }

    /// The answer to `request`: recorded, or offered (and fitting it).
    fn known(&self, request: &InputRequest) -> Option<InputAnswer> {
        if let Some(answer) = self.recorded.get(&request.key) {
            return Some(answer.clone());
        }
        if request.key.ends_with(APPROVAL_SUFFIX) {
            return None;
        }
        let offered = self.offered.get(&request.key)?;
        let answer = wire::answer(&request.kind, offered.clone()).ok()?;
        self.used.lock().insert(request.key.clone(), answer.clone());
        Some(answer)
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
            match self.known(&request) {
                Some(answer) => answers.push(answer),
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
