//! `tools/call` answered by the guard itself. Through rmcp a call's line is read five
//! times (the guard's tree, its check that rmcp can read it, the text handed on, rmcp's
//! untagged message enum, the answer's envelope) and crosses three more tasks and two
//! in-memory pipes: most of the server's CPU per call. A plain, well-formed call of an
//! initialised session is read once here into exactly the fields rmcp would hand the
//! handler, runs through the same [`McpServer::run_call`] as rmcp's, and its result is
//! shaped as rmcp shapes it for the session's protocol and written with the client's id.
//! Its progress and log notifications go to the client's output before the result, and
//! `notifications/cancelled` naming it stops it, and it then gets no answer, as for any
//! call.
//!
//! Only what rmcp would treat exactly so is taken: a session that negotiated a protocol
//! older than 2026-07-28 (the session model) and has completed its handshake, and a
//! request with exactly `jsonrpc`, `id`, `method` and `params`, whose `params` hold only
//! `name`, `arguments` and a `_meta` with at most a `progressToken`. Anything else —
//! another method or protocol, a member this reader does not know (`inputResponses`, a
//! task, a protocol version in `_meta`), a duplicate member, an id that is not a string
//! or a number, a call of a `task` tool — takes the ordinary way through rmcp, which
//! answers it as before.

use super::{Ids, error_line};
use crate::inline_task::{InlineTask, InlineTasks};
use crate::mcp::server::lines::Lines;
use crate::mcp::server::{Call, McpServer, RequestPeer, Sink};
use parking_lot::Mutex;
use rmcp::model::ServerResult;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use std::borrow::Cow;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// JSON-RPC's internal error (the gate refused the call, as rmcp answers it).
const INTERNAL_ERROR: i64 = -32603;

/// Calls beyond what the gate can hold (running or queued) that may be answering at once.
const ANSWERING: usize = 64;

/// Places for the guard's own calls in one session, from when their line is read until
/// their answer is queued for the client. The guard takes one before it reads a line, so
/// a client that stops reading its answers (its calls cannot hand them on) stops being
/// read: its output, not the server's memory, fills up. There is room for every call the
/// gate can hold, so waiting calls never keep the guard from reading a cancellation.
pub(super) fn places(server: &McpServer) -> Arc<Semaphore> {
    Arc::new(Semaphore::new(
        server.session_capacity().saturating_add(ANSWERING),
    ))
}

/// A `tools/call` request the guard answers itself.
pub(super) struct DirectCall {
    /// The request id as the client wrote it (JSON text).
    raw_id: String,
    call: Call,
}

/// The request's members, exactly; another member makes it take the ordinary way.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    #[serde(borrow)]
    id: &'a RawValue,
    #[serde(borrow)]
    method: Cow<'a, str>,
    params: Params,
}

/// `CallToolRequestParams` without the members of a retried or task call.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    name: String,
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
    #[serde(rename = "_meta", default)]
    meta: Option<Meta>,
}

/// A request `_meta` that asks for nothing but progress.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta {
    #[serde(rename = "progressToken", default)]
    progress_token: Option<Value>,
}

/// `line` as a call the guard answers itself for `server`'s session, if it is one.
pub(super) fn take(server: &McpServer, line: &str) -> Option<DirectCall> {
    if server.takes_direct_calls() {
        // A task tool's call may become a task or be refused: rmcp's way decides.
        parse(line, || server.session_peer())
            .filter(|direct| !server.is_task_tool(&direct.call.name))
            .map(|mut direct| {
                direct.call.origin = server.session_origin();
                direct
            })
    } else {
        None
    }
}

/// `line` as a plain `tools/call` request of the client `peer` gives, or `None` when it
/// is anything else.
fn parse(line: &str, peer: impl FnOnce() -> RequestPeer) -> Option<DirectCall> {
    let envelope: Envelope<'_> = serde_json::from_str(line).ok()?;
    if envelope.jsonrpc != "2.0" || envelope.method != "tools/call" {
        return None;
    }
    let raw_id = envelope.id.get();
    // A string or a number; `null` and the rest are rmcp's (and the guard's) to refuse.
    if !raw_id.starts_with(|c: char| c == '"' || c == '-' || c.is_ascii_digit()) {
        return None;
    }
    // As rmcp reads it: a token that is not a valid progress token is no token.
    let progress_token = envelope
        .params
        .meta
        .and_then(|meta| meta.progress_token)
        .and_then(|token| rmcp::model::ProgressToken::deserialize(&token).ok());
    Some(DirectCall {
        raw_id: raw_id.to_string(),
        call: Call {
            name: envelope.params.name,
            arguments: envelope.params.arguments,
            tool_call_id: raw_id.to_string(),
            progress_token,
            peer: peer(),
            // The stdio guard serves the local user.
            caller: crate::Caller::local(),
            continuation: None,
            origin: crate::mcp::server::origin::Origin::stdio(None),
        },
    })
}

/// Runs `request` on a task of its own (calls of one session run side by side) and sends
/// its notifications and answer to `lines`; `place` (see [`places`]) is held until then.
/// The call is in `ids` until it has answered, so a shutdown waits for it and
/// `notifications/cancelled` finds it.
///
/// The task is an [`InlineTask`]: polled first here, and finished by the VM's thread that
/// hands it the handler's answer, which also writes the answer (when nothing is queued
/// before it, see [`Lines`]); the runtime's thread is not woken between the call's line
/// and the client's next one. The task belongs to the session's `tasks`, which drops it if
/// the session ends before it has answered.
pub(super) fn start(
    server: &McpServer,
    lines: &Lines,
    ids: &Arc<Mutex<Ids>>,
    tasks: &InlineTasks,
    request: DirectCall,
    place: OwnedSemaphorePermit,
) {
    let cancel = CancellationToken::new();
    let serial = ids.lock().begin_direct(&request.raw_id, cancel.clone());
    let server = server.clone();
    let lines = lines.clone();
    let ids = ids.clone();
    // Boxed (the task boxes it once): the call's future (the whole pipeline up to the VM's
    // thread) is kilobytes, and spawning it by value copied it three times into the task
    // (callgrind: ≈66k instructions of `memcpy` per call, and as many bytes through the cache).
    InlineTask::start(
        tasks,
        Box::pin(async move {
            let DirectCall { raw_id, call } = request;
            let outcome = server
                .run_call(call, Sink::Lines(lines.clone()), cancel.cancelled_owned())
                .await;
            let answer = match outcome {
                Ok(response) => {
                    // As rmcp answers a session of a protocol older than 2026-07-28 (where a
                    // call never ends for input: its requests go to the client as requests).
                    let mut result = ServerResult::from(response);
                    result.strip_result_type_for_legacy_peer();
                    result.strip_non_object_output_for_legacy_peer();
                    answer_line(&raw_id, &result).map_err(Unanswered::Unwritable)
                }
                Err(refused) => Err(Unanswered::Refused(refused)),
            };
            let line = answer.unwrap_or_else(|why| why.error_line(&raw_id));
            // A request the client cancelled gets no answer; a client that closed its output
            // has nobody to answer.
            let withdrawn = ids.lock().withdrawn(serial);
            if !withdrawn {
                let _ = lines.send(line).await;
            }
            ids.lock().end_direct(serial);
            drop(place);
        }),
    );
}

/// Room a result line is written into at first: most answers fit (an echo's is ≈200
/// bytes), so the serializer does not grow it step by step.
const LINE_ROOM: usize = 512;

/// The JSON-RPC line answering request `raw_id` with `result`, the id first as on every
/// answer the guard writes; serialised straight into the line (no text of the result
/// alone, copied into the line after).
fn answer_line(raw_id: &str, result: &ServerResult) -> Result<String, serde_json::Error> {
    let mut line = Vec::with_capacity(LINE_ROOM.max(raw_id.len() + 64));
    line.extend_from_slice(b"{\"id\":");
    line.extend_from_slice(raw_id.as_bytes());
    line.extend_from_slice(b",\"jsonrpc\":\"2.0\",\"result\":");
    serde_json::to_writer(&mut line, result)?;
    line.push(b'}');
    // serde_json writes UTF-8 only, and the id is text: this never replaces anything.
    Ok(String::from_utf8(line)
        .unwrap_or_else(|not_text| String::from_utf8_lossy(not_text.as_bytes()).into_owned()))
}

impl Unanswered {
    /// The JSON-RPC error line of the answer to request `raw_id`.
    fn error_line(&self, raw_id: &str) -> String {
        match self {
            Self::Refused(refused) => {
                let body = json!({"jsonrpc": "2.0", "error": refused.to_error()});
                super::splice_id(raw_id, &body)
            }
            Self::Unwritable(_) => error_line(Some(raw_id), INTERNAL_ERROR, &self.to_string()),
        }
    }
}

/// Why a call the guard took gets an error answer instead of its result.
#[derive(Debug, thiserror::Error)]
enum Unanswered {
    /// The gate refused it (shutdown, a full queue).
    #[error(transparent)]
    Refused(#[from] crate::mcp::server::gate::Refused),
    /// Its result could not be written as JSON.
    #[error("cannot write the result: {0}")]
    Unwritable(serde_json::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer() -> RequestPeer {
        RequestPeer {
            protocol: rmcp::model::ProtocolVersion::V_2025_11_25,
            capabilities: Default::default(),
            log_level: None,
        }
    }

    #[test]
    fn a_plain_call_is_read_with_its_progress_token() {
        let call = parse(
            r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"tools/call","params":{"name":"echo","arguments":{"a":1},"_meta":{"progressToken":"p"}}}"#,
            peer,
        )
        .expect("a plain call");
        assert_eq!(call.raw_id, "18446744073709551616");
        assert_eq!(call.call.tool_call_id, "18446744073709551616");
        assert_eq!(call.call.name, "echo");
        assert_eq!(call.call.arguments.expect("arguments")["a"], 1);
        assert!(call.call.progress_token.is_some());
    }

    #[test]
    fn anything_but_a_plain_call_takes_the_ordinary_way() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":[1],"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"x":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":5}}"#,
        ] {
            assert!(parse(line, peer).is_none(), "{line}");
        }
    }

    #[test]
    fn an_answer_line_is_the_result_under_the_clients_id() {
        let result = ServerResult::from(rmcp::model::CallToolResult::success(vec![
            rmcp::model::ContentBlock::text("x".repeat(2 * LINE_ROOM)),
        ]));
        let line = answer_line(r#""a\"b""#, &result).expect("a line");
        // Byte for byte the line the guard wrote before (the result's text spliced in).
        let text = serde_json::to_string(&result).expect("a text");
        assert_eq!(
            line,
            format!(r#"{{"id":"a\"b","jsonrpc":"2.0","result":{text}}}"#)
        );
        assert!(line.starts_with(r#"{"id":"a\"b","jsonrpc":"2.0","result":"#));
        let parsed: Value = serde_json::from_str(&line).expect("one JSON object");
        assert_eq!(parsed["id"], "a\"b");
        assert_eq!(
            parsed["result"],
            serde_json::to_value(&result).expect("a value")
        );
    }

    #[test]
    fn an_invalid_progress_token_is_no_token() {
        let call = parse(
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","_meta":{"progressToken":1.5}}}"#,
            peer,
        )
        .expect("a plain call");
        assert!(call.call.progress_token.is_none());
        assert_eq!(call.raw_id, r#""a""#);
    }
}
