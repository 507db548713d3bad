//! Input requests of MCP calls (`ctx.ask`, `ctx.roots`, `ctx.sample`, the approval gate's
//! question), on both revisions:
//!
//! - a 2025-11-25 session sends them as server→client requests and awaits the answers
//!   ([`session::PeerAsker`]);
//! - on 2026-07-28 a call is *multi-round*: a request without a recorded answer ends the
//!   call with an `input_required` result carrying the pending requests (keyed) and a
//!   sealed `requestState` ([`seal`]); the client's retry brings `inputResponses` and the
//!   state back, and the handler runs again from the start with every answer recorded so
//!   far ([`replay::ReplayAsker`]). Nothing of a call is kept on the server between
//!   rounds: any process holding the same key continues it.
//!
//! On 2026-07-28 the client's roots reach the server only as answers: a call whose recorded
//! answers hold the client's roots (it called `ctx.roots()` in an earlier round) runs with
//! `fs` narrowed to them from its start.

pub(crate) mod replay;
pub(crate) mod seal;
pub(crate) mod session;
pub(crate) mod wire;

use crate::fs_roots::ClientRoots;
use crate::{InputAnswer, InputKind};
use replay::ReplayAsker;
use rmcp::model::{InputRequests, InputRequiredResult, InputResponses};
use seal::{RoundState, Sealer};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What a 2026-07-28 `tools/call` brings for its rounds.
#[derive(Debug, Default)]
pub(crate) struct Continuation {
    /// The client's capabilities (the request's `_meta`).
    pub(crate) declared: Option<rmcp::model::ClientCapabilities>,
    /// The sealed state of the previous round.
    pub(crate) request_state: Option<String>,
    /// The answers to the previous round's requests.
    pub(crate) responses: Option<InputResponses>,
}

/// What a retry brings: the answers recorded for the call (those its sealed state carries
/// plus the responses to the requests of the last round) and the responses it *offers*
/// for requests not asked yet (no state, or keys the last round did not ask).
#[derive(Debug, Default)]
pub(crate) struct Answers {
    /// Recorded answers, by key (they go into the next state).
    pub(crate) recorded: BTreeMap<String, InputAnswer>,
    /// Unasked-for responses, by key, checked only when the handler makes that request.
    pub(crate) offered: BTreeMap<String, Value>,
}

/// The answers of a call of `tool` with `args` (see [`Answers`]). `Err` is a refused state
/// (changed, stale, another call's), answered as invalid params. A response to a request of
/// the last round that has the wrong shape is left out: the handler asks it again (as
/// SEP-2322 recommends: re-request, do not fail).
pub(crate) fn recorded_answers(
    sealer: &Sealer,
    tool: &str,
    args: &Value,
    continuation: &Continuation,
) -> Result<Answers, String> {
    let responses = continuation.responses.clone().unwrap_or_default();
    let Some(sealed) = &continuation.request_state else {
        return Ok(Answers {
            recorded: BTreeMap::new(),
            offered: responses,
        });
    };
    let state = sealer
        .open(sealed, tool, args)
        .map_err(|refused| refused.to_string())?;
    let mut answers = Answers {
        recorded: state.answers,
        offered: BTreeMap::new(),
    };
    for (key, response) in responses {
        let Some(kind) = state.pending.get(&key) else {
            answers.offered.insert(key, response);
            continue;
        };
        match wire::answer(kind, response) {
            Ok(answer) => {
                answers.recorded.insert(key, answer);
            }
            Err(e) => tracing::debug!("{tool}: inputResponses['{key}'] is {e}; asking again"),
        }
    }
    Ok(answers)
}

/// The roots the recorded answers hold (the first roots answer, in key order), as the
/// client roots narrowing `fs`.
pub(crate) fn recorded_roots(answers: &BTreeMap<String, InputAnswer>) -> Option<Arc<ClientRoots>> {
    let roots = answers.values().find_map(|a| match a {
        InputAnswer::Roots { roots } => Some(roots),
        _ => None,
    })?;
    let paths = roots
        .iter()
        .filter_map(|root| super::roots::file_path(&root.uri))
        .collect();
    Some(Arc::new(ClientRoots::new(paths)))
}

/// The `input_required` result of a call of `tool` with `args` that stopped for `pending`,
/// with `recorded` the answers so far.
pub(crate) fn input_required(
    sealer: &Sealer,
    tool: &str,
    args: &Value,
    recorded: &BTreeMap<String, InputAnswer>,
    pending: BTreeMap<String, InputKind>,
) -> InputRequiredResult {
    let mut requests = InputRequests::new();
    for (key, kind) in &pending {
        // Checked when the request was made (one that cannot be sent failed then).
        if let Ok(request) = wire::request(kind) {
            requests.insert(key.clone(), request);
        }
    }
    let state = RoundState {
        tool: tool.to_string(),
        args: seal::args_digest(args),
        answers: recorded.clone(),
        pending,
        sealed_at_ms: seal::now_ms(),
    };
    InputRequiredResult::new(Some(requests), Some(sealer.seal(&state)))
}

/// The asker of a 2026-07-28 call with `answers`; it cancels `stop` when the call must end
/// for input.
pub(crate) fn replay_asker(
    answers: Answers,
    continuation: &Continuation,
    stop: tokio_util::sync::CancellationToken,
) -> Arc<ReplayAsker> {
    Arc::new(ReplayAsker::new(
        answers,
        continuation.declared.clone(),
        stop,
    ))
}
