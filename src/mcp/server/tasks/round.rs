//! A task's input-request round as its record holds it: the requests its handler waits on
//! and the responses `tasks/update` took so far. Kept in the store (not in the process
//! whose handler waits) so that every process sharing the store shows the task's
//! `inputRequests` and takes its responses ([`super::round_store`]); the waiting process
//! picks up a complete round from the record (see [`super::watch`]).

use super::input::Answers;
use rmcp::model::InputRequests;
use serde::{Deserialize, Serialize};

/// One round of input requests, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredRound {
    /// The round's number in its task: answers to one round never wake another.
    pub(crate) n: u64,
    /// Requests without a response yet, by key.
    #[serde(default)]
    pub(crate) outstanding: InputRequests,
    /// Responses taken so far, by key.
    #[serde(default)]
    pub(crate) answered: Answers,
}

impl StoredRound {
    /// Every request has its response: the handler may go on.
    pub(crate) fn complete(&self) -> bool {
        self.outstanding.is_empty()
    }
}

/// What a `tasks/update` did.
#[derive(Debug, PartialEq)]
pub(crate) enum Taken {
    /// The task waits on no request (or does not exist).
    NothingWaits,
    /// `taken` responses were recorded; the round as it now stands.
    Some {
        /// How many responses answered outstanding requests.
        taken: usize,
        /// The round after them.
        round: StoredRound,
    },
}
