//! A thin validating layer between the MCP client and rmcp, so that every JSON-RPC request
//! gets an answer. rmcp (3.11) drops or misanswers some messages — it silently drops a
//! line that is not valid JSON or not a valid message (a client then waits forever),
//! answers `tools/call` with malformed params as `-32601 Method not found`, and stores
//! request ids as `i64` (so `u64::MAX`, huge integers and floats are lost or wrapped).
//!
//! The guard reads the client's lines itself (at most `max_line_bytes` each) and:
//! - answers parse errors (`-32700`), non-objects, batches and broken envelopes (`-32600`)
//!   and invalid params (`-32602`, naming the field) itself, with the request's id when it
//!   has one;
//! - gives every request an internal integer id before rmcp sees it and puts the client's id
//!   back, byte for byte, on rmcp's answer (also in `notifications/cancelled`);
//! - sends no answer for a request the client cancelled (`notifications/cancelled`): the
//!   call is stopped, and its `cancelled` result is dropped, as the spec asks of a receiver;
//! - answers a plain `tools/call` of an initialised session itself, through the same
//!   handler ([`direct_call`]);
//! - passes everything else to rmcp unchanged.
//!
//! Messages that are not requests (notifications, responses) get no answer, as JSON-RPC
//! requires; a broken one is logged and dropped.

use super::Shared;
use crate::inline_task::InlineTasks;
use crate::json_type::json_type;
use crate::{Host, Selection};
use parking_lot::Mutex;
use rmcp::model::ClientJsonRpcMessage;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

mod direct_call;
mod prefix_id;

pub(crate) use prefix_id::prefix_id;

/// Default longest line (one message) read from the client (`[serve] max_request_bytes`).
pub(crate) const DEFAULT_MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// Once the client's input has ended, how long the session waits for the client to read
/// on while its output makes no progress: a client that closed its input but never reads
/// its output would otherwise keep the server blocked on a full pipe for good (and with it
/// rmcp, whose answers wait for the same output).
const FINAL_WRITE_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// JSON-RPC error codes.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// Client ids by internal id, and back, for requests rmcp has not answered yet; and the
/// calls the guard is answering itself.
#[derive(Default)]
struct Ids {
    next: i64,
    original: HashMap<i64, String>,
    internal: HashMap<String, i64>,
    /// Calls answered by the guard, by serial (the guard's own numbers: foldhash, not
    /// SipHash, for two lookups per call).
    direct: foldhash::HashMap<i64, DirectEntry>,
    /// The `subscriptions/listen` requests forwarded to rmcp and not answered yet, by
    /// internal id.
    listens: foldhash::HashSet<i64>,
    /// Told whenever a request ends with no `subscriptions/listen` left open: what
    /// [`settled`] waits on (every listen answered, or every request).
    settled: Arc<tokio::sync::Notify>,
}

/// One call the guard is answering itself.
struct DirectEntry {
    /// The client's id (read once, so a cancellation compares without parsing).
    id: Value,
    /// Stops the call.
    cancel: CancellationToken,
    /// The client cancelled it: it gets no answer (a receiver should not answer a
    /// cancelled request; clients report an answer to an id they forgot as an error).
    withdrawn: bool,
}

impl Ids {
    fn assign(&mut self, raw: &str) -> i64 {
        self.next += 1;
        self.original.insert(self.next, raw.to_string());
        self.internal.insert(raw.to_string(), self.next);
        self.next
    }

    fn take(&mut self, internal: i64) -> Option<String> {
        let raw = self.original.remove(&internal)?;
        self.internal.remove(&raw);
        self.listens.remove(&internal);
        self.ended();
        Some(raw)
    }

    /// A request ended: tells [`settled`]'s waiters when no listen is left open (the only
    /// moments either of its conditions can have become true; `listens` is part of
    /// `original`, so an idle map has none).
    fn ended(&self) {
        if self.listens.is_empty() {
            self.settled.notify_waiters();
        }
    }

    /// Notes a call the guard answers itself; its serial ends it.
    fn begin_direct(&mut self, raw: &str, cancel: CancellationToken) -> i64 {
        self.next += 1;
        let id = serde_json::from_str(raw).unwrap_or(Value::Null);
        let entry = DirectEntry {
            id,
            cancel,
            withdrawn: false,
        };
        self.direct.insert(self.next, entry);
        self.next
    }

    /// Whether the client cancelled the guard's call `serial` (it then gets no answer).
    fn withdrawn(&self, serial: i64) -> bool {
        self.direct
            .get(&serial)
            .is_some_and(|entry| entry.withdrawn)
    }

    fn end_direct(&mut self, serial: i64) {
        self.direct.remove(&serial);
        self.ended();
    }

    /// The client cancelled `request_id`: stops the guard's own calls with that id, which
    /// then go unanswered; false when there is none.
    fn cancel_direct(&mut self, request_id: &Value) -> bool {
        let mut found = false;
        for entry in self.direct.values_mut() {
            if &entry.id == request_id {
                entry.cancel.cancel();
                entry.withdrawn = true;
                found = true;
            }
        }
        found
    }

    /// Cancels every call the guard is answering itself (the session is over: they still
    /// answer `cancelled`).
    fn cancel_all_direct(&self) {
        for entry in self.direct.values() {
            entry.cancel.cancel();
        }
    }

    /// True when no request is waiting for its answer.
    fn idle(&self) -> bool {
        self.original.is_empty() && self.direct.is_empty()
    }
}

/// The client's request ids behind the internal ones, for the server handler (a call's
/// `ctx.tool_call_id` is the id the client wrote).
#[derive(Clone, Default)]
pub(crate) struct IdMap(Arc<Mutex<Ids>>);

impl IdMap {
    /// The client's id (raw JSON text) of the request rmcp knows as `internal`.
    pub(crate) fn original(&self, internal: i64) -> Option<String> {
        self.0.lock().original.get(&internal).cloned()
    }
}

/// What to do with one line from the client.
enum Verdict {
    /// Forward this line to rmcp.
    Forward(String),
    /// Answer the client with this line.
    Answer(String),
    /// Nothing (a blank line, or a broken notification or response).
    Drop,
}

/// An error response with the id as the client wrote it (`null` when unknown).
fn error_line(raw_id: Option<&str>, code: i64, message: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "error": {"code": code, "message": message}});
    splice_id(raw_id.unwrap_or("null"), &body)
}

/// `{"id":RAW, ...rest of object}` — the id text kept exactly as the client sent it.
fn splice_id(raw_id: &str, object: &Value) -> String {
    let rest = object.to_string();
    match rest.strip_prefix('{') {
        Some("}") | None => format!("{{\"id\":{raw_id}}}"),
        Some(tail) => format!("{{\"id\":{raw_id},{tail}"),
    }
}

/// The `id` of a message as raw JSON text, if it has one.
fn raw_id(line: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct IdOnly<'a> {
        #[serde(borrow, default)]
        id: Option<&'a RawValue>,
    }
    let parsed: IdOnly<'_> = serde_json::from_str(line).ok()?;
    parsed.id.map(|raw| raw.get().to_string())
}

/// The `-32602` message for a `tools/call` whose params rmcp would misread, if any.
fn tools_call_params_problem(params: Option<&Value>) -> Option<String> {
    let Some(Value::Object(params)) = params else {
        return Some(format!(
            "Invalid params: 'params' must be an object with 'name', got {}",
            params.map_or("nothing", json_type)
        ));
    };
    match params.get("name") {
        Some(Value::String(_)) => {}
        Some(other) => {
            return Some(format!(
                "Invalid params: 'name' must be a string, got {}",
                json_type(other)
            ));
        }
        None => return Some("Invalid params: 'name' is required".to_string()),
    }
    match params.get("arguments") {
        None | Some(Value::Null) | Some(Value::Object(_)) => None,
        Some(other) => Some(format!(
            "Invalid params: 'arguments' must be an object, got {}",
            json_type(other)
        )),
    }
}

/// Judges one line from the client.
fn judge(line: &str, ids: &Mutex<Ids>) -> Verdict {
    if line.trim().is_empty() {
        return Verdict::Drop;
    }
    let value: Value = match serde_json::from_str(line) {
        Ok(value) => value,
        Err(e) => {
            return Verdict::Answer(error_line(None, PARSE_ERROR, &format!("Parse error: {e}")));
        }
    };
    let raw = raw_id(line);
    let Value::Object(mut message) = value else {
        let why = match value {
            Value::Array(_) => "Invalid Request: batches are not supported".to_string(),
            other => format!(
                "Invalid Request: a message must be an object, got {}",
                json_type(&other)
            ),
        };
        return Verdict::Answer(error_line(None, INVALID_REQUEST, &why));
    };
    let is_request = message.contains_key("method") && message.contains_key("id");
    let envelope_problem = match (message.get("jsonrpc"), message.get("method")) {
        (Some(Value::String(v)), _) if v != "2.0" => Some("'jsonrpc' must be \"2.0\"".to_string()),
        (Some(Value::String(_)), Some(Value::String(_))) => None,
        (Some(Value::String(_)), Some(other)) => Some(format!(
            "'method' must be a string, got {}",
            json_type(other)
        )),
        (Some(Value::String(_)), None)
            if message.contains_key("result") || message.contains_key("error") =>
        {
            None // a response to one of the server's requests
        }
        (Some(Value::String(_)), None) => Some("'method' is missing".to_string()),
        (Some(other), _) => Some(format!(
            "'jsonrpc' must be \"2.0\", got {}",
            json_type(other)
        )),
        (None, _) => Some("'jsonrpc' is missing (must be \"2.0\")".to_string()),
    };
    let id_problem = match message.get("id") {
        None | Some(Value::String(_) | Value::Number(_) | Value::Null) => None,
        Some(other) => Some(format!(
            "'id' must be a string, number or null, got {}",
            json_type(other)
        )),
    };
    if let Some(problem) = envelope_problem.or(id_problem) {
        if message.contains_key("id") {
            let id = raw
                .as_deref()
                .filter(|_| matches!(message.get("id"), Some(Value::String(_) | Value::Number(_))));
            return Verdict::Answer(error_line(
                id,
                INVALID_REQUEST,
                &format!("Invalid Request: {problem}"),
            ));
        }
        tracing::warn!("MCP: dropping a malformed notification: {problem}");
        return Verdict::Drop;
    }
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_string);
    if is_request
        && method.as_deref() == Some("tools/call")
        && let Some(problem) = tools_call_params_problem(message.get("params"))
    {
        return Verdict::Answer(error_line(raw.as_deref(), INVALID_PARAMS, &problem));
    }
    if is_request {
        let raw = raw.unwrap_or_else(|| "null".to_string());
        let mut ids = ids.lock();
        let internal = ids.assign(&raw);
        if method.as_deref() == Some("subscriptions/listen") {
            ids.listens.insert(internal);
        }
        drop(ids);
        message.insert("id".into(), Value::from(internal));
    } else if method.as_deref() == Some("notifications/cancelled")
        && let Some(Value::Object(params)) = message.get_mut("params")
        && let Some(request_id) = params.get("requestId")
    {
        let mut ids = ids.lock();
        if ids.cancel_direct(request_id) {
            return Verdict::Drop; // one of the guard's own calls: rmcp never saw it
        }
        if let Some(internal) = ids.internal.get(&request_id.to_string()).copied() {
            // rmcp stops the handler and drops its answer; forgetting the id here makes
            // `restore` drop an answer rmcp had already written before it saw this.
            ids.take(internal);
            params.insert("requestId".into(), Value::from(internal));
        }
    }
    let message = Value::Object(message);
    // Read (without copying) exactly as rmcp will: what it cannot read is answered here.
    if let Err(e) = ClientJsonRpcMessage::deserialize(&message) {
        if is_request && let Some(internal) = message.get("id").and_then(Value::as_i64) {
            let original = ids.lock().take(internal);
            return Verdict::Answer(error_line(
                original.as_deref(),
                INVALID_PARAMS,
                &format!(
                    "Invalid params for {}: {e}",
                    method.as_deref().unwrap_or("?")
                ),
            ));
        }
        tracing::warn!("MCP: dropping a message rmcp cannot read: {e}");
        return Verdict::Drop;
    }
    Verdict::Forward(message.to_string())
}

/// Where a 2026-07-28 subscription's id rides: in `_meta` of its acknowledgment, of every
/// notification it carries and of its final result.
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// Puts the client's id back on one of rmcp's lines (answers to requests it forwarded, and
/// the subscription id in `_meta`, which names the `subscriptions/listen` request); `None`
/// for an answer to a request the client cancelled.
fn restore(line: &str, ids: &Mutex<Ids>) -> Option<String> {
    let remapped;
    let line = match restore_subscription_id(line, ids) {
        Some(text) => {
            remapped = text;
            remapped.as_str()
        }
        None => line,
    };
    // Only the envelope is parsed: the members stay raw text, so a large answer (a
    // `tools/list` of 1,000 tools) is neither built as a JSON tree nor printed again.
    let Ok(members) = serde_json::from_str::<BTreeMap<String, &RawValue>>(line) else {
        return Some(line.to_string());
    };
    if members.contains_key("method") {
        return Some(line.to_string()); // the server's own requests and notifications
    }
    let Some(internal) = members
        .get("id")
        .and_then(|raw| serde_json::from_str::<i64>(raw.get()).ok())
    else {
        return Some(line.to_string());
    };
    let Some(original) = ids.lock().take(internal) else {
        // Every request rmcp sees has an internal id the guard noted: an answer to one it
        // no longer knows is to a request the client cancelled, which gets no answer.
        tracing::debug!("MCP: dropping the answer to cancelled request {internal}");
        return None;
    };
    let mut out = String::with_capacity(line.len() + original.len());
    out.push_str("{\"id\":");
    out.push_str(&original);
    for (key, raw) in members.iter().filter(|(key, _)| key.as_str() != "id") {
        out.push(',');
        out.push_str(&Value::String(key.clone()).to_string());
        out.push(':');
        out.push_str(raw.get());
    }
    out.push('}');
    Some(out)
}

/// `line` with the subscription id in its `params._meta` or `result._meta` put back as the
/// client wrote the `subscriptions/listen` request's id; `None` when it has none to change.
fn restore_subscription_id(line: &str, ids: &Mutex<Ids>) -> Option<String> {
    // Cheap test first: only subscription traffic names the key.
    if !line.contains(SUBSCRIPTION_ID) {
        return None;
    }
    let mut message: Value = serde_json::from_str(line).ok()?;
    let meta = ["params", "result"]
        .into_iter()
        .find_map(|member| message.get(member)?.get("_meta"))?;
    let internal = meta.get(SUBSCRIPTION_ID)?.as_i64()?;
    let original = ids.lock().original.get(&internal).cloned()?;
    let original: Value = serde_json::from_str(&original).ok()?;
    for member in ["params", "result"] {
        if let Some(Value::Object(meta)) = message
            .get_mut(member)
            .and_then(|value| value.get_mut("_meta"))
            && meta.contains_key(SUBSCRIPTION_ID)
        {
            meta.insert(SUBSCRIPTION_ID.into(), original.clone());
        }
    }
    Some(message.to_string())
}

/// Waits (at most 2 s) until every request has been answered (by rmcp or by the guard), so
/// closing rmcp's input loses no answer.
async fn answered(ids: &Mutex<Ids>) {
    settled(ids, Ids::idle).await;
}

/// Waits (at most 2 s) until every `subscriptions/listen` forwarded to rmcp has been
/// answered. rmcp (3.11) acknowledges a subscription and waits for its serve loop to
/// confirm the acknowledgment went out before the server's `listen` runs; once its input has
/// closed, that loop no longer confirms anything, so a subscription acknowledged just before
/// the client's input ended would never send its final result. Closing rmcp's input only
/// after the subscriptions (told to end, see `McpServer::end_subscriptions`) have answered
/// keeps their final results.
async fn subscriptions_answered(ids: &Mutex<Ids>) {
    settled(ids, |ids| ids.listens.is_empty()).await;
}

/// Waits (at most 2 s) until `done` holds of `ids`, woken as requests end.
async fn settled(ids: &Mutex<Ids>, done: impl Fn(&Ids) -> bool) {
    let told = ids.lock().settled.clone();
    let holds = async {
        loop {
            let notified = told.notified();
            tokio::pin!(notified);
            // Registered before the test below: a request ending between the two still
            // wakes it.
            notified.as_mut().enable();
            if done(&ids.lock()) {
                return;
            }
            notified.await;
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), holds).await;
}

/// A line over the limit: how long it was and the id its first bytes show, if any.
struct Overlong {
    length: usize,
    id: Option<String>,
}

/// The answer to a line over `max`, with the id its first bytes showed (else `null`).
fn over_long(Overlong { length, id }: Overlong, max: usize) -> Verdict {
    Verdict::Answer(error_line(
        id.as_deref(),
        INVALID_REQUEST,
        &format!(
            "Invalid Request: a message of {length} bytes is over the limit of {max} bytes \
             ([serve] max_request_bytes)"
        ),
    ))
}

/// The answer to a line that is not UTF-8.
fn not_utf8(e: std::string::FromUtf8Error) -> Verdict {
    Verdict::Answer(error_line(
        None,
        PARSE_ERROR,
        &format!(
            "Parse error: not valid UTF-8 (at byte {})",
            e.utf8_error().valid_up_to()
        ),
    ))
}

/// Reads one line of at most `max` bytes (without its newline). `Ok(None)` at the end of
/// input; `Err(_)` when the line was longer than `max`: its bytes are skipped, and the id
/// is looked for in its first `max` bytes.
async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> std::io::Result<Option<Result<Vec<u8>, Overlong>>> {
    let mut line = Vec::new();
    // Set once the line is over `max`.
    let mut over: Option<Overlong> = None;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(match over {
                Some(over) => Some(Err(over)),
                None if line.is_empty() => None,
                None => Some(Ok(line)),
            });
        }
        let (chunk, found) = match memchr::memchr(b'\n', buffer) {
            Some(at) => (&buffer[..at], Some(at)),
            None => (buffer, None),
        };
        match &mut over {
            Some(over) => over.length += chunk.len(),
            None if line.len() + chunk.len() > max => {
                // The first `max` bytes are the prefix the id is read from; then let go.
                let room = max - line.len();
                line.extend_from_slice(&chunk[..room]);
                over = Some(Overlong {
                    length: line.len() + chunk.len() - room,
                    id: prefix_id(&line),
                });
                line = Vec::new();
            }
            None => line.extend_from_slice(chunk),
        }
        let used = found.map_or(chunk.len(), |at| at + 1);
        reader.consume(used);
        if found.is_some() {
            return Ok(Some(match over {
                Some(over) => Err(over),
                None => Ok(line),
            }));
        }
    }
}

/// Serves one session of `shared` to a client speaking on `input`/`output` through the
/// guard; returns when the client closes its input and rmcp has finished, or after
/// `shutdown` resolves: then the client's input is no longer read, running calls get
/// `[serve] drain_ms` to finish (then they are cancelled and answer `cancelled`), and the
/// session ends.
pub(crate) async fn serve<R, W>(
    shared: Arc<Shared>,
    input: R,
    output: W,
    direct_output: Option<std::os::fd::OwnedFd>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), crate::Error>
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    use rmcp::ServiceExt;
    let max_line_bytes = shared
        .host
        .config()
        .config
        .serve
        .max_request_bytes
        .unwrap_or(DEFAULT_MAX_LINE_BYTES);
    let id_map = IdMap::default();
    let ids = id_map.0.clone();
    let original: super::OriginalIds = Arc::new(move |internal| id_map.original(internal));
    let server = super::McpServer::new(shared.clone(), Some(original));
    let (rmcp_in, mut to_rmcp) = tokio::io::duplex(1 << 16);
    let (from_rmcp, rmcp_out) = tokio::io::duplex(1 << 16);
    // One writer task owns the client's output for what cannot go out at once (see
    // `lines`). Each message and whatever else is already queued go out in one write: with
    // tokio's stdout every write and flush is a trip to a blocking thread.
    let (lines, outgoing) = super::lines::channel(256, direct_output);
    let output_progress = lines.progress();
    let writer = tokio::spawn(outgoing.write_to(output));
    // Aborted when the client stops reading after its input ended (see
    // `FINAL_WRITE_LIMIT`), and when the session is dropped.
    let stop_writer = writer.abort_handle();
    let writer = tokio_util::task::AbortOnDropHandle::new(writer);

    // rmcp's answers, with the client's ids put back.
    let answers = {
        let ids = ids.clone();
        let lines = lines.clone();
        tokio_util::task::AbortOnDropHandle::new(tokio::spawn(async move {
            let mut reader = tokio::io::BufReader::new(from_rmcp).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                let Some(line) = restore(&line, &ids) else {
                    continue;
                };
                if lines.send(line).await.is_err() {
                    break;
                }
            }
        }))
    };

    // The shutdown, as a token the reader waits on: polling the signal streams themselves
    // at every line cost more than the rest of reading it.
    let stopping = CancellationToken::new();
    // Ended with the session however it ends (it holds the signal listener).
    let _signal = {
        let stopping = stopping.clone();
        tokio_util::task::AbortOnDropHandle::new(tokio::spawn(async move {
            shutdown.await;
            stopping.cancel();
        }))
    };

    // The calls the guard answers itself, dropped if the session ends (its future dropped
    // with its runtime, say) before they have answered: an answer never goes to a session
    // that is gone. Normally every one has ended before `serve` returns (the writer drains
    // only once their output is dropped), and closing finds none.
    let direct_tasks = CloseOnDrop(Arc::default());

    // Cancelled when the reader ends (the input ended, a shutdown, or the session's end).
    let input_ended = CancellationToken::new();
    // A shutdown the reader may not see: it is told only while it waits for a line, not
    // while it waits to hand one on (a full output behind it).
    let shutting_down = stopping.clone();

    // The client's lines, judged. Stopped with the session however it ends (declared after
    // `direct_tasks`, so it stops first): a reader left running after `serve` was dropped
    // would go on consuming the input and start calls no session answers.
    let reader = {
        let ids = ids.clone();
        let server = server.clone();
        let direct_tasks = direct_tasks.0.clone();
        let ended = input_ended.clone().drop_guard();
        tokio_util::task::AbortOnDropHandle::new(tokio::spawn(async move {
            let _ended = ended;
            let mut input = input;
            let places = direct_call::places(&server);
            let shutdown = stopping.cancelled_owned();
            tokio::pin!(shutdown);
            loop {
                let read = tokio::select! {
                    read = async {
                        // A place for the line, in case it is a call the guard answers.
                        let place = places.clone().acquire_owned().await;
                        (read_line(&mut input, max_line_bytes).await, place)
                    } => read,
                    () = &mut shutdown => {
                        // Stop reading; answer what is running, then end the session.
                        tracing::info!("shutting down: draining running calls");
                        shared.gate.drain(shared.drain_period).await;
                        answered(&ids).await;
                        break;
                    }
                };
                let (line, place) = match read {
                    (Ok(Some(line)), place) => (line, place),
                    (Ok(None) | Err(_), _) => break,
                };
                let line = line.map_err(|over| over_long(over, max_line_bytes));
                let text = line.and_then(|bytes| String::from_utf8(bytes).map_err(not_utf8));
                let verdict = match text {
                    Err(answer) => answer,
                    Ok(text) => match (direct_call::take(&server, &text), place) {
                        (Some(call), Ok(place)) => {
                            // Answered by its own task, through `lines`.
                            direct_call::start(&server, &lines, &ids, &direct_tasks, call, place);
                            Verdict::Drop
                        }
                        _ => judge(&text, &ids),
                    },
                };
                let sent = match verdict {
                    Verdict::Forward(text) => {
                        to_rmcp.write_all(text.as_bytes()).await.is_ok()
                            && to_rmcp.write_all(b"\n").await.is_ok()
                    }
                    Verdict::Answer(text) => lines.send(text).await.is_ok(),
                    Verdict::Drop => true,
                };
                if !sent {
                    break;
                }
            }
            // Open subscriptions would hold the session (rmcp waits for every handler).
            server.end_subscriptions();
            subscriptions_answered(&ids).await;
            // Dropping `to_rmcp` closes rmcp's input: the session ends.
        }))
    };

    let running = server
        .serve((rmcp_in, rmcp_out))
        .await
        .map_err(|e| crate::Error::McpStart(Box::new(e)))?;
    let finished = async {
        let ended = running.waiting().await;
        reader.abort();
        // rmcp cancels the calls it was running when the session ends; so does the guard.
        // Their answers (`cancelled`) still go out if the client reads them.
        ids.lock().cancel_all_direct();
        // The answers task and the reader held the last senders: the writer then drains.
        let _ = answers.await;
        let _ = writer.await;
        ended
    };
    // Once the input has ended, a client that stops reading ends the output: the writer is
    // stopped, every line still to send fails (the answers task ends, and with it rmcp's
    // output, so rmcp's writes fail instead of waiting), and the session finishes.
    let client_stopped_reading = async {
        tokio::select! {
            () = input_ended.cancelled() => {}
            () = shutting_down.cancelled() => {}
        }
        output_progress.stalled(FINAL_WRITE_LIMIT).await;
    };
    tokio::pin!(finished);
    let ended = tokio::select! {
        ended = &mut finished => ended,
        () = client_stopped_reading => {
            tracing::warn!(
                "the client read nothing of its last answers for {} s after its input \
                 ended; the rest are dropped",
                FINAL_WRITE_LIMIT.as_secs()
            );
            // The last line may be cut off where the writer stopped; nothing follows it
            // (every later line fails), and the client is not reading anyway.
            stop_writer.abort();
            finished.await
        }
    };
    ended.map(|_| ()).map_err(crate::Error::McpSession)
}

/// Closes a session's [`InlineTasks`] when dropped.
struct CloseOnDrop(Arc<InlineTasks>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}

impl Host {
    /// Serves `selection` of this host's tools over MCP on `input`/`output`
    /// (newline-delimited JSON-RPC, as on stdio: `toolhost serve` passes stdin and stdout)
    /// until the client closes `input`. Every reload — by a [`Watch`](crate::Watch) or
    /// [`Host::reload`] — that changes the listed tools sends the client
    /// `notifications/tools/list_changed`.
    ///
    /// Once `input` has ended, a client that reads nothing of `output` for 5 s gets no more
    /// of it: the session stops writing and returns. An `output` that writes on a blocking
    /// thread (tokio's `stdout`) may still have that thread stuck in its last write; end
    /// such a runtime with [`Runtime::shutdown_timeout`](tokio::runtime::Runtime::shutdown_timeout)
    /// rather than by dropping it, which waits for its blocking threads.
    ///
    /// ```no_run
    /// # async fn demo(host: toolhost::Host) -> toolhost::Result<()> {
    /// let stdin = tokio::io::BufReader::new(tokio::io::stdin());
    /// host.serve_mcp(toolhost::Selection::default(), stdin, tokio::io::stdout()).await
    /// # }
    /// ```
    pub async fn serve_mcp<R, W>(
        &self,
        selection: Selection,
        input: R,
        output: W,
    ) -> crate::Result<()>
    where
        R: tokio::io::AsyncBufRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let shared = Shared::new(self.clone(), selection);
        serve(shared, input, output, None, std::future::pending()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(line: &str) -> Value {
        match judge(line, &Mutex::new(Ids::default())) {
            Verdict::Answer(text) => serde_json::from_str(&text).expect("an answer is JSON"),
            Verdict::Forward(text) => panic!("forwarded: {text}"),
            Verdict::Drop => panic!("dropped"),
        }
    }

    #[test]
    fn ids_are_spliced_back_exactly() {
        let body = json!({"jsonrpc": "2.0", "result": {}});
        assert_eq!(
            splice_id("18446744073709551615", &body),
            r#"{"id":18446744073709551615,"jsonrpc":"2.0","result":{}}"#
        );
        assert_eq!(splice_id("1.5e300", &json!({})), r#"{"id":1.5e300}"#);
    }

    #[test]
    fn answers_get_the_client_id_back_with_every_other_member_verbatim() {
        let ids = Mutex::new(Ids::default());
        let internal = ids.lock().assign("18446744073709551615");
        let line =
            format!(r#"{{"jsonrpc":"2.0","id":{internal},"result":{{"x":1.50,"q\"k":[]}}}}"#);
        let restored = restore(&line, &ids);
        assert_eq!(
            restored.as_deref(),
            Some(r#"{"id":18446744073709551615,"jsonrpc":"2.0","result":{"x":1.50,"q\"k":[]}}"#)
        );
        // A notification from the server passes unchanged.
        let note = r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;
        assert_eq!(restore(note, &ids).as_deref(), Some(note));
    }

    #[test]
    fn a_subscription_id_in_meta_is_the_listen_requests_client_id() {
        let ids = Mutex::new(Ids::default());
        let internal = ids.lock().assign(r#""listen-1""#);
        let note = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{{"_meta":{{"{SUBSCRIPTION_ID}":{internal}}}}}}}"#
        );
        let restored: Value = serde_json::from_str(&restore(&note, &ids).unwrap()).unwrap();
        assert_eq!(restored["params"]["_meta"][SUBSCRIPTION_ID], "listen-1");
        // The subscription stays open: its final result is mapped too.
        let done = format!(
            r#"{{"jsonrpc":"2.0","id":{internal},"result":{{"resultType":"complete","_meta":{{"{SUBSCRIPTION_ID}":{internal}}}}}}}"#
        );
        let restored: Value = serde_json::from_str(&restore(&done, &ids).unwrap()).unwrap();
        assert_eq!(restored["id"], "listen-1");
        assert_eq!(restored["result"]["_meta"][SUBSCRIPTION_ID], "listen-1");
    }

    #[test]
    fn broken_requests_get_the_right_codes() {
        assert_eq!(answer("{nope")["error"]["code"], PARSE_ERROR);
        assert_eq!(answer("[1]")["error"]["code"], INVALID_REQUEST);
        assert_eq!(answer(r#"{"jsonrpc":"2.0","id":7,"method":5}"#)["id"], 7);
        let bad_args = answer(
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":"s"}}"#,
        );
        assert_eq!(bad_args["error"]["code"], INVALID_PARAMS);
        assert_eq!(bad_args["id"], "a");
        assert!(
            bad_args["error"]["message"]
                .as_str()
                .unwrap()
                .contains("'arguments' must be an object, got string")
        );
    }

    #[test]
    fn a_request_is_forwarded_with_an_internal_id_and_answered_with_the_original() {
        let ids = Mutex::new(Ids::default());
        let Verdict::Forward(line) = judge(
            r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}"#,
            &ids,
        ) else {
            panic!("not forwarded");
        };
        let forwarded: Value = serde_json::from_str(&line).unwrap();
        let internal = forwarded["id"].as_i64().unwrap();
        let answer = format!(r#"{{"jsonrpc":"2.0","id":{internal},"result":{{}}}}"#);
        assert_eq!(
            restore(&answer, &ids).as_deref(),
            Some(r#"{"id":123456789012345678901234567890,"jsonrpc":"2.0","result":{}}"#)
        );
    }

    #[test]
    fn closing_waits_for_a_forwarded_listen_until_its_final_result_passes() {
        let ids = Arc::new(Mutex::new(Ids::default()));
        let listen = r#"{"jsonrpc":"2.0","id":"sub","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}"#;
        let Verdict::Forward(line) = judge(listen, &ids) else {
            panic!("not forwarded");
        };
        let internal = serde_json::from_str::<Value>(&line).unwrap()["id"]
            .as_i64()
            .unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            let waiting = tokio::spawn({
                let ids = ids.clone();
                async move { subscriptions_answered(&ids).await }
            });
            tokio::task::yield_now().await;
            assert!(!waiting.is_finished(), "returned before the answer");
            let done = format!(r#"{{"jsonrpc":"2.0","id":{internal},"result":{{}}}}"#);
            assert!(restore(&done, &ids).is_some());
            // Woken by the answer, well before the wait's own 2 s bound.
            tokio::time::timeout(std::time::Duration::from_millis(1500), waiting)
                .await
                .expect("woken by the answer")
                .unwrap();
        });
    }
}
