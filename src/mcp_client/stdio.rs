//! The stdio transport to a child server, in place of rmcp's `TokioChildProcess`, which
//! reads a message whole and parses it whole: here
//! - one message is at most [`max_message_bytes`] long, checked while reading; a longer one
//!   ends the session with that reason (rmcp's transport dropped it silently, and its
//!   request waited for its timeout);
//! - a `tools/list` answer is screened tool by tool ([`super::screen`]): a tool that
//!   cannot be read is left out with a reason, the rest is kept;
//! - an answer that cannot be read at all becomes an error answer to its request naming
//!   the cause (rmcp dropped it: a silent timeout).
//!
//! Writing is rmcp's (its codec over the child's stdin).

use super::error::Unreadable;
use super::screen;
use parking_lot::Mutex;
use process_wrap::tokio::ChildWrapper;
use rmcp::RoleClient;
use rmcp::model::{ClientRequest, ErrorData, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};

/// Longest message accepted whatever `max_list_bytes` says (rmcp's own default for stdio
/// and HTTP): call results may be large.
const MIN_MESSAGE_BYTES: u64 = 16 * 1024 * 1024;

/// How long closing waits for the child to exit after its stdin is closed.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// Most `tools/list` requests remembered as unanswered.
const MAX_OPEN_LISTINGS: usize = 64;

/// A read buffer grown past this is given back after the message.
const KEEP_BUFFER: usize = 1024 * 1024;

/// The longest message a server may send: `max_list_bytes`, at least 16 MiB.
pub(super) fn max_message_bytes(max_list_bytes: u64) -> usize {
    usize::try_from(max_list_bytes.max(MIN_MESSAGE_BYTES)).unwrap_or(usize::MAX)
}

/// What the transport tells its link beside the messages.
#[derive(Default)]
pub(super) struct Notes {
    /// Why the transport ended the session, if it did.
    fatal: Mutex<Option<String>>,
    /// Tools left out of the listings read since last taken.
    left_out: Mutex<Vec<String>>,
}

impl Notes {
    /// Why the transport ended the session, if it did.
    pub(super) fn fatal(&self) -> Option<String> {
        self.fatal.lock().clone()
    }

    /// Notes the reasons for tools left out of a listing.
    pub(super) fn add_left_out(&self, reasons: Vec<String>) {
        self.left_out.lock().extend(reasons);
    }

    /// Takes the reasons for the tools left out since the last call.
    pub(super) fn take_left_out(&self) -> Vec<String> {
        std::mem::take(&mut *self.left_out.lock())
    }
}

/// The transport over a spawned child's stdin and stdout.
pub(super) struct ChildTransport {
    /// Killed when dropped (process-wrap's kill-on-drop).
    child: Box<dyn ChildWrapper>,
    reader: BufReader<ChildStdout>,
    /// The message being read (kept across cancelled reads).
    line: Vec<u8>,
    max_line: usize,
    writer: AsyncRwTransport<RoleClient, tokio::io::Empty, ChildStdin>,
    /// Ids of our `tools/list` requests not answered yet.
    listings: VecDeque<RequestId>,
    server: String,
    notes: Arc<Notes>,
}

/// One read.
enum Read {
    Line,
    End,
    TooLong,
}

impl ChildTransport {
    /// Takes over `child` (spawned with piped stdin and stdout).
    pub(super) fn new(
        server: &str,
        mut child: Box<dyn ChildWrapper>,
        max_line: usize,
        notes: Arc<Notes>,
    ) -> std::io::Result<Self> {
        let missing = |what| std::io::Error::other(format!("the child's {what} is not piped"));
        let stdin = child.stdin().take().ok_or_else(|| missing("stdin"))?;
        let stdout = child.stdout().take().ok_or_else(|| missing("stdout"))?;
        Ok(Self {
            child,
            reader: BufReader::new(stdout),
            line: Vec::new(),
            max_line,
            writer: AsyncRwTransport::new(tokio::io::empty(), stdin),
            listings: VecDeque::new(),
            server: server.to_string(),
            notes,
        })
    }

    /// Reads one `\n`-terminated line into `self.line`, never past `max_line` bytes.
    /// Cancellation-safe: what was read stays in `self.line` for the next call.
    async fn read_line(&mut self) -> Read {
        loop {
            let available = match self.reader.fill_buf().await {
                Ok([]) | Err(_) => return Read::End,
                Ok(available) => available,
            };
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |at| at + 1);
            if self.line.len().saturating_add(take) > self.max_line {
                return Read::TooLong;
            }
            self.line.extend_from_slice(&available[..take]);
            self.reader.consume(take);
            if newline.is_some() {
                return Read::Line;
            }
        }
    }

    /// The message in `raw`, if it is one for rmcp.
    fn decode(&mut self, raw: &[u8]) -> Option<RxJsonRpcMessage<RoleClient>> {
        let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let raw = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw);
        if raw.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        let Ok(text) = std::str::from_utf8(raw) else {
            tracing::warn!(target: "toolhost::mcp_client", server = %self.server, "ignoring a message that is not UTF-8");
            return None;
        };
        // The common case, one parse: no listing is awaited, so this cannot be one.
        let mut first_try = None;
        if self.listings.is_empty() {
            match serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(text) {
                Ok(message) => return Some(message),
                Err(error) => first_try = Some(error),
            }
        }
        let head: screen::Head<'_> = match serde_json::from_str(text) {
            Ok(head) => head,
            Err(error) => {
                tracing::warn!(target: "toolhost::mcp_client", server = %self.server, "ignoring a line that is not a JSON-RPC message: {error}");
                return None;
            }
        };
        let answer_to = head.answer_to();
        let is_listing = answer_to.as_ref().is_some_and(|id| {
            let at = self.listings.iter().position(|open| open == id);
            at.and_then(|at| self.listings.remove(at)).is_some()
        });
        let parsed = match (is_listing, head.result, &answer_to) {
            (true, Some(result), Some(id)) => self.screened(id, result.get()),
            _ => match first_try {
                Some(error) => Err(error),
                None => serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(text),
            }
            .map_err(Unreadable::Answer),
        };
        match (parsed, answer_to) {
            (Ok(message), _) => Some(message),
            // An answer we cannot read still ends its request, with the cause.
            (Err(reason), Some(id)) => {
                tracing::warn!(target: "toolhost::mcp_client", server = %self.server, "{reason}");
                Some(JsonRpcMessage::error(
                    ErrorData::internal_error(reason.to_string(), None),
                    Some(id),
                ))
            }
            (Err(reason), None) => {
                tracing::warn!(target: "toolhost::mcp_client", server = %self.server, "ignoring a message: {reason}");
                None
            }
        }
    }

    /// A `tools/list` answer to `id`, with the tools that cannot be read left out (noted).
    fn screened(
        &self,
        id: &RequestId,
        result: &str,
    ) -> Result<RxJsonRpcMessage<RoleClient>, Unreadable> {
        let (message, left_out) = screen::listing_answer(id, result)?;
        let parsed = serde_json::from_str(&message).map_err(Unreadable::List)?;
        self.notes.add_left_out(left_out);
        Ok(parsed)
    }
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(request) = &item
            && let ClientRequest::ListToolsRequest(_) = &request.request
        {
            // An id stays here only if its answer never came (the request timed out):
            // a few at most, but never without bound; the oldest goes first (a listing in
            // flight keeps its per-tool screening).
            if self.listings.len() >= MAX_OPEN_LISTINGS {
                self.listings.pop_front();
            }
            self.listings.push_back(request.id.clone());
        }
        self.writer.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            match self.read_line().await {
                Read::Line => {}
                Read::End => return None,
                Read::TooLong => {
                    *self.notes.fatal.lock() = Some(format!(
                        "it sent a message longer than {} bytes (the limit for one message: \
                         max_list_bytes, at least 16 MiB)",
                        self.max_line
                    ));
                    return None;
                }
            }
            let line = std::mem::take(&mut self.line);
            let message = self.decode(&line);
            self.line = line;
            self.line.clear();
            if self.line.capacity() > KEEP_BUFFER {
                self.line = Vec::new();
            }
            if message.is_some() {
                return message;
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // The MCP way first (stdin closed, the server exits), then the group is killed.
        let _ = self.writer.close().await;
        if tokio::time::timeout(CLOSE_WAIT, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.start_kill();
            let _ = tokio::time::timeout(CLOSE_WAIT, self.child.wait()).await;
        }
        Ok(())
    }
}
