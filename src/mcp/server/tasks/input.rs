//! A running task's wait for input (the extension's `input_required` status), on the side
//! of the process whose handler waits: the handler opens a round with [`Inputs::open`]
//! and waits on it; the round's requests and the client's responses live in the task's
//! record ([`super::round`]), so `tasks/get` and `tasks/update` work through any process
//! sharing the store; once the record holds a response to every request, whoever sees it
//! first (the `tasks/update` of this process, or the watcher polling the store for
//! updates taken by another) hands the answers over with [`Inputs::deliver`].
//!
//! What stays here is what only the waiting process can know: the round it waits on (a
//! round is numbered, so answers to an older one never wake a newer one), every key
//! issued over the task's life (a key is used once), and whether the task was cancelled.

use parking_lot::Mutex;
use rmcp::model::InputRequests;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use tokio::sync::oneshot;

/// The answers of one round, by key.
pub(crate) type Answers = BTreeMap<String, Value>;

/// One task's wait for input.
#[derive(Default)]
pub(crate) struct Inputs {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The number of the last round opened (0: none yet).
    round: u64,
    /// Wakes the handler once its round is answered.
    waiter: Option<oneshot::Sender<Answers>>,
    /// Every key issued over the task's life (a key is never reused).
    issued: BTreeSet<String>,
    /// The task was cancelled: nothing more is asked or answered.
    closed: bool,
}

/// Why a round could not be asked or was not answered.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AskError {
    /// The key was used before in this task.
    #[error("input request key {0:?} was already used in this task")]
    KeyReused(String),
    /// A round is already waiting (a task asks one round at a time).
    #[error("this task is already waiting for input")]
    Busy,
    /// The task was cancelled.
    #[error("the task was cancelled")]
    Closed,
    /// The round could not be recorded where clients read it.
    #[error("its input requests could not be recorded: {0}")]
    NotRecorded(String),
}

impl Inputs {
    /// Opens a round asking `requests`: its number and where its answers arrive.
    pub(crate) fn open(
        &self,
        requests: &InputRequests,
    ) -> Result<(u64, oneshot::Receiver<Answers>), AskError> {
        let mut state = self.state.lock();
        if state.closed {
            return Err(AskError::Closed);
        }
        if state.waiter.is_some() {
            return Err(AskError::Busy);
        }
        if let Some(key) = requests.keys().find(|key| state.issued.contains(*key)) {
            return Err(AskError::KeyReused(key.clone()));
        }
        state.issued.extend(requests.keys().cloned());
        state.round += 1;
        let (send, answered) = oneshot::channel();
        state.waiter = Some(send);
        Ok((state.round, answered))
    }

    /// Hands `answers` to the handler waiting on round `round`; `false` when it waits on
    /// no such round (delivered already, withdrawn, a later round, cancelled).
    pub(crate) fn deliver(&self, round: u64, answers: Answers) -> bool {
        let mut state = self.state.lock();
        if state.round != round {
            return false;
        }
        match state.waiter.take() {
            // The handler may have stopped meanwhile; then nobody needs the answers.
            Some(waiter) => waiter.send(answers).is_ok(),
            None => false,
        }
    }

    /// Stops waiting on round `round` (its asker went away).
    pub(crate) fn withdraw(&self, round: u64) {
        let mut state = self.state.lock();
        if state.round == round {
            state.waiter = None;
        }
    }

    /// Ends the exchange (the task was cancelled): a waiting round fails, no other starts.
    pub(crate) fn close(&self) {
        let mut state = self.state.lock();
        state.closed = true;
        state.waiter = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::InputRequest;
    use serde_json::json;

    fn requests(keys: &[&str]) -> InputRequests {
        keys.iter()
            .map(|key| {
                let request: InputRequest = serde_json::from_value(json!({
                    "method": "roots/list", "params": {}
                }))
                .expect("a roots/list input request");
                (key.to_string(), request)
            })
            .collect()
    }

    fn answers(pairs: &[(&str, Value)]) -> Answers {
        pairs
            .iter()
            .map(|(key, value)| (key.to_string(), value.clone()))
            .collect()
    }

    #[tokio::test]
    async fn answers_reach_the_round_they_were_given_for_once() {
        let inputs = Inputs::default();
        let (round, answered) = inputs.open(&requests(&["a"])).expect("opens");
        assert!(!inputs.deliver(round + 1, answers(&[("a", json!(0))])));
        assert!(inputs.deliver(round, answers(&[("a", json!(1))])));
        assert!(!inputs.deliver(round, answers(&[("a", json!(2))])), "twice");
        assert_eq!(answered.await, Ok(answers(&[("a", json!(1))])));
    }

    #[tokio::test]
    async fn a_key_is_never_asked_twice_in_a_task() {
        let inputs = Inputs::default();
        let (round, _answered) = inputs.open(&requests(&["k"])).expect("opens");
        assert_eq!(inputs.open(&requests(&["j"])).err(), Some(AskError::Busy));
        assert!(inputs.deliver(round, answers(&[("k", json!(true))])));
        assert_eq!(
            inputs.open(&requests(&["k"])).err(),
            Some(AskError::KeyReused("k".into()))
        );
    }

    #[tokio::test]
    async fn cancelling_fails_the_waiting_round_and_refuses_new_ones() {
        let inputs = Inputs::default();
        let (round, answered) = inputs.open(&requests(&["a"])).expect("opens");
        inputs.close();
        assert!(answered.await.is_err());
        assert!(!inputs.deliver(round, answers(&[("a", json!(1))])));
        assert_eq!(inputs.open(&requests(&["b"])).err(), Some(AskError::Closed));
    }

    #[tokio::test]
    async fn a_withdrawn_round_takes_no_answers() {
        let inputs = Inputs::default();
        let (round, _answered) = inputs.open(&requests(&["a"])).expect("opens");
        inputs.withdraw(round);
        assert!(!inputs.deliver(round, answers(&[("a", json!(1))])));
        assert!(inputs.open(&requests(&["b"])).is_ok(), "a new round opens");
    }
}
