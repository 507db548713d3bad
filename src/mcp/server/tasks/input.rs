//! A task's input requests (the extension's `input_required` status): the running handler
//! asks a round of requests with [`Inputs::ask`] and waits; `tasks/get` shows them as the
//! task's `inputRequests`; `tasks/update` delivers the client's responses with
//! [`Inputs::answer`], and once every request of the round has one the handler goes on.
//!
//! The rules are the extension's: a key is used once over the task's life; responses for
//! keys that are not outstanding are ignored; a partial set leaves the task waiting for the
//! rest. A `tasks/update` for a task that waits on nothing is refused with a clear error
//! (there is nothing its responses could answer). The state lives in the process that runs
//! the handler: the handler is what waits.

use parking_lot::Mutex;
use rmcp::model::{InputRequests, InputResponses};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use tokio::sync::oneshot;

/// The answers of one round, by key.
pub(crate) type Answers = BTreeMap<String, Value>;

/// One task's exchange of input requests and responses.
#[derive(Default)]
pub(crate) struct Inputs {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Requests of the current round not answered yet.
    outstanding: InputRequests,
    /// Answers of the current round so far.
    answered: Answers,
    /// Every key issued over the task's life (a key is never reused).
    issued: BTreeSet<String>,
    /// Wakes the handler once the round is answered.
    waiter: Option<oneshot::Sender<Answers>>,
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
}

/// `tasks/update` for a task that waits on no input request.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("the task is not waiting for input")]
pub(crate) struct NothingWaits;

impl Inputs {
    /// Asks `requests` as one round and waits until each has a response (in
    /// `tasks/update`s); dropping the future withdraws the round.
    pub(crate) async fn ask(&self, requests: InputRequests) -> Result<Answers, AskError> {
        if requests.is_empty() {
            return Ok(Answers::new());
        }
        let answered = {
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
            state.outstanding = requests;
            state.answered.clear();
            let (send, answered) = oneshot::channel();
            state.waiter = Some(send);
            answered
        };
        let withdraw = Withdraw(self);
        let answers = answered.await.map_err(|_| AskError::Closed);
        drop(withdraw);
        answers
    }

    /// The requests waiting for a response (`None` when the task waits on none).
    pub(crate) fn outstanding(&self) -> Option<InputRequests> {
        let state = self.state.lock();
        (!state.outstanding.is_empty()).then(|| state.outstanding.clone())
    }

    /// Takes the responses to outstanding requests (others are ignored) and wakes the
    /// handler once the round is complete; answers how many were taken.
    pub(crate) fn answer(&self, responses: InputResponses) -> Result<usize, NothingWaits> {
        let mut state = self.state.lock();
        if state.outstanding.is_empty() {
            return Err(NothingWaits);
        }
        let mut taken = 0;
        for (key, response) in responses {
            if state.outstanding.remove(&key).is_some() {
                state.answered.insert(key, response);
                taken += 1;
            }
        }
        if state.outstanding.is_empty() {
            let answers = std::mem::take(&mut state.answered);
            if let Some(waiter) = state.waiter.take() {
                // The handler may have stopped meanwhile; then nobody needs the answers.
                let _ = waiter.send(answers);
            }
        }
        Ok(taken)
    }

    /// Ends the exchange (the task was cancelled): a waiting round fails, no other starts.
    pub(crate) fn close(&self) {
        let mut state = self.state.lock();
        state.closed = true;
        state.outstanding.clear();
        state.answered.clear();
        state.waiter = None;
    }
}

/// Withdraws the round when its asker stops waiting (its handler ended): the task no
/// longer shows requests nobody waits for.
struct Withdraw<'a>(&'a Inputs);

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        let mut state = self.0.state.lock();
        state.outstanding.clear();
        state.answered.clear();
        state.waiter = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::InputRequest;
    use serde_json::json;
    use std::sync::Arc;

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

    fn responses(pairs: &[(&str, Value)]) -> InputResponses {
        pairs
            .iter()
            .map(|(key, value)| (key.to_string(), value.clone()))
            .collect()
    }

    #[tokio::test]
    async fn a_round_resumes_once_every_request_is_answered_and_others_are_ignored() {
        let inputs = Arc::new(Inputs::default());
        let asking = tokio::spawn({
            let inputs = inputs.clone();
            async move { inputs.ask(requests(&["a", "b"])).await }
        });
        while inputs.outstanding().is_none() {
            tokio::task::yield_now().await;
        }
        let taken = inputs.answer(responses(&[("a", json!(1)), ("zzz", json!(0))]));
        assert_eq!(taken, Ok(1));
        assert_eq!(
            inputs
                .outstanding()
                .map(|o| o.into_keys().collect::<Vec<_>>()),
            Some(vec!["b".to_string()])
        );
        assert_eq!(inputs.answer(responses(&[("b", json!(2))])), Ok(1));
        let answers = asking.await.expect("joins").expect("answered");
        assert_eq!(answers, responses(&[("a", json!(1)), ("b", json!(2))]));
        assert_eq!(inputs.outstanding(), None);
    }

    #[tokio::test]
    async fn an_update_with_nothing_waiting_is_refused() {
        let inputs = Inputs::default();
        assert_eq!(
            inputs.answer(responses(&[("a", json!(1))])),
            Err(NothingWaits)
        );
    }

    #[tokio::test]
    async fn a_key_is_never_asked_twice_in_a_task() {
        let inputs = Arc::new(Inputs::default());
        let first = tokio::spawn({
            let inputs = inputs.clone();
            async move { inputs.ask(requests(&["k"])).await }
        });
        while inputs.outstanding().is_none() {
            tokio::task::yield_now().await;
        }
        assert_eq!(inputs.answer(responses(&[("k", json!(true))])), Ok(1));
        first.await.expect("joins").expect("answered");
        assert_eq!(
            inputs.ask(requests(&["k"])).await,
            Err(AskError::KeyReused("k".into()))
        );
    }

    #[tokio::test]
    async fn cancelling_fails_the_waiting_round_and_withdraws_its_requests() {
        let inputs = Arc::new(Inputs::default());
        let asking = tokio::spawn({
            let inputs = inputs.clone();
            async move { inputs.ask(requests(&["a"])).await }
        });
        while inputs.outstanding().is_none() {
            tokio::task::yield_now().await;
        }
        inputs.close();
        assert_eq!(asking.await.expect("joins"), Err(AskError::Closed));
        assert_eq!(inputs.outstanding(), None);
        assert_eq!(inputs.ask(requests(&["b"])).await, Err(AskError::Closed));
    }
}
