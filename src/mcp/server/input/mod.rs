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
//! On 2026-07-28 the client's roots reach the server only as answers: a tool that declares
//! `needs = { "roots" }` gets a first round asking them (key [`ROOTS_KEY`]) before it runs,
//! and a call whose recorded answers hold the client's roots has `fs` narrowed to them.

pub(crate) mod replay;
pub(crate) mod seal;
pub(crate) mod session;
mod wire;

use crate::fs_roots::ClientRoots;
use crate::{InputAnswer, InputKind};
use replay::ReplayAsker;
use rmcp::model::{InputRequests, InputRequiredResult, InputResponses};
use seal::{RoundState, Sealer};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The key of the roots request a tool declaring `needs = { "roots" }` gets first.
pub(crate) const ROOTS_KEY: &str = "toolhost/roots";

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

/// The answers recorded for a call of `tool` with `args`: those its state carries plus the
/// client's responses to the last round. `Err` is a refused state (changed, stale, another
/// call's), answered as invalid params. Responses that answer nothing the last round asked,
/// have the wrong shape, or come without a state are left out: the handler asks those
/// requests again (as SEP-2322 recommends: re-request, do not fail).
pub(crate) fn recorded_answers(
    sealer: &Sealer,
    tool: &str,
    args: &Value,
    continuation: &Continuation,
) -> Result<BTreeMap<String, InputAnswer>, String> {
    let responses = continuation.responses.as_ref().filter(|r| !r.is_empty());
    let Some(sealed) = &continuation.request_state else {
        if responses.is_some() {
            tracing::debug!("{tool}: inputResponses without requestState; asking again");
        }
        return Ok(BTreeMap::new());
    };
    let state = sealer
        .open(sealed, tool, args)
        .map_err(|refused| refused.to_string())?;
    let mut answers = state.answers;
    for (key, response) in responses.into_iter().flatten() {
        let Some(kind) = state.pending.get(key) else {
            tracing::debug!("{tool}: inputResponses['{key}'] answers nothing asked; ignored");
            continue;
        };
        match wire::answer(kind, response.clone()) {
            Ok(answer) => {
                answers.insert(key.clone(), answer);
            }
            Err(e) => tracing::debug!("{tool}: inputResponses['{key}'] is {e}; asking again"),
        }
    }
    Ok(answers)
}

/// The roots the recorded answers hold (the eager [`ROOTS_KEY`] round's first), as the
/// client roots narrowing `fs`.
pub(crate) fn recorded_roots(answers: &BTreeMap<String, InputAnswer>) -> Option<Arc<ClientRoots>> {
    let roots = answers
        .get(ROOTS_KEY)
        .into_iter()
        .chain(answers.values())
        .find_map(|a| match a {
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

/// The asker of a 2026-07-28 call with `recorded` answers; it cancels `stop` when the call
/// must end for input.
pub(crate) fn replay_asker(
    recorded: BTreeMap<String, InputAnswer>,
    continuation: &Continuation,
    stop: tokio_util::sync::CancellationToken,
) -> Arc<ReplayAsker> {
    Arc::new(ReplayAsker::new(
        recorded,
        continuation.declared.clone(),
        stop,
    ))
}
