//! `notifications/cancelled` on `--stateless`. Without sessions rmcp serves every POST with
//! a throwaway service and drops notifications unread (202), so a client's cancellation
//! never reached the call it named: the call ran to its end. Here the POSTs are read first:
//! a `tools/call` gets a cancellation token that rides in its request's extensions to the
//! handler (which treats it as rmcp's own per-request token, see
//! [`McpServer::call_tool`](crate::mcp::server::McpServer)), and a cancellation naming its
//! id cancels it. The call then answers `cancelled` on its still-open POST, as a stateful
//! call does, and nothing is left for rmcp to fail to send.
//!
//! Without a session, a client is told apart by its `Authorization` header: a cancellation
//! reaches calls with its id made with the same credentials (or none, like it), never
//! another token's calls.

use super::body;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::Response;
use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Stateless calls running now, by (credentials, request id).
#[derive(Default)]
pub(crate) struct Running {
    next: AtomicU64,
    calls: Mutex<HashMap<Key, HashMap<u64, CancellationToken>>>,
}

/// Who (a digest of the `Authorization` header) and which request (its id as JSON text).
#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    who: u64,
    id: String,
}

/// A stateless call's cancellation, in its request's extensions; when the handler is done
/// with the request (the last clone goes), the call is forgotten.
#[derive(Clone)]
pub(crate) struct StatelessCall(Arc<Entry>);

struct Entry {
    running: Arc<Running>,
    key: Key,
    serial: u64,
    token: CancellationToken,
}

impl Drop for Entry {
    fn drop(&mut self) {
        let mut calls = self.running.calls.lock();
        if let Some(same_id) = calls.get_mut(&self.key) {
            same_id.remove(&self.serial);
            if same_id.is_empty() {
                calls.remove(&self.key);
            }
        }
    }
}

impl StatelessCall {
    /// The token a cancellation of this call cancels.
    pub(crate) fn token(&self) -> CancellationToken {
        self.0.token.clone()
    }
}

/// The token of the stateless call whose request's extensions are `extensions` (rmcp hands
/// the handler the HTTP request's parts among them), if it is one.
pub(crate) fn token_of(extensions: &rmcp::model::Extensions) -> Option<CancellationToken> {
    extensions
        .get::<axum::http::request::Parts>()?
        .extensions
        .get::<StatelessCall>()
        .map(StatelessCall::token)
}

impl Running {
    fn register(self: &Arc<Self>, key: Key) -> StatelessCall {
        let serial = self.next.fetch_add(1, Ordering::Relaxed);
        let token = CancellationToken::new();
        self.calls
            .lock()
            .entry(key.clone())
            .or_default()
            .insert(serial, token.clone());
        StatelessCall(Arc::new(Entry {
            running: self.clone(),
            key,
            serial,
            token,
        }))
    }

    fn cancel(&self, key: &Key) {
        if let Some(same_id) = self.calls.lock().get(key) {
            for token in same_id.values() {
                token.cancel();
            }
        }
    }

    /// How many calls are tracked (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.calls.lock().values().map(HashMap::len).sum()
    }
}

/// The middleware's state.
#[derive(Clone)]
pub(crate) struct Tracking {
    pub(crate) running: Arc<Running>,
    /// `[serve] max_request_bytes`.
    pub(crate) max_bytes: usize,
    /// `[serve] header_timeout_ms`: how long a body may take to arrive.
    pub(crate) timeout: Duration,
}

/// What a POST's body is, as far as cancellation goes.
enum Seen {
    /// A `tools/call` with this id (JSON text).
    Call(String),
    /// `notifications/cancelled` naming this request id (JSON text).
    Cancel(String),
    /// Anything else.
    Other,
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<String>,
    /// Left raw: only a cancellation's is read (a call's arguments may be large).
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

/// The members of `notifications/cancelled`'s params that are read.
#[derive(Deserialize)]
struct CancelParams {
    #[serde(rename = "requestId")]
    request_id: Value,
}

fn seen(body: &[u8]) -> Seen {
    let Ok(envelope) = serde_json::from_slice::<Envelope<'_>>(body) else {
        return Seen::Other; // rmcp answers what it cannot read
    };
    // Ids compared as JSON values written back out, so `7` and `7` always meet.
    let normal = |raw: &RawValue| {
        serde_json::from_str::<Value>(raw.get())
            .ok()
            .filter(|id| id.is_string() || id.is_number())
            .map(|id| id.to_string())
    };
    match (envelope.method.as_deref(), envelope.id) {
        (Some("tools/call"), Some(id)) => normal(id).map_or(Seen::Other, Seen::Call),
        (Some("notifications/cancelled"), None) => envelope
            .params
            .and_then(|params| serde_json::from_str::<CancelParams>(params.get()).ok())
            .map(|params| params.request_id)
            .filter(|id| id.is_string() || id.is_number())
            .map_or(Seen::Other, |id| Seen::Cancel(id.to_string())),
        _ => Seen::Other,
    }
}

/// Middleware (stateless only): notes each `tools/call` with a token of its own, and
/// cancels the calls a `notifications/cancelled` names.
pub(crate) async fn track(
    State(tracking): State<Tracking>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let bytes = match body::read_limited(body, tracking.max_bytes, tracking.timeout).await {
        Ok(bytes) => bytes,
        Err(refusal) => return refusal,
    };
    let who = {
        let mut hasher = crate::digest::hasher();
        parts
            .headers
            .get(header::AUTHORIZATION)
            .map(|value| value.as_bytes())
            .hash(&mut hasher);
        hasher.finish()
    };
    match seen(&bytes) {
        Seen::Call(id) => {
            let call = tracking.running.register(Key { who, id });
            parts.extensions.insert(call);
        }
        Seen::Cancel(id) => tracking.running.cancel(&Key { who, id }),
        Seen::Other => {}
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancellation_reaches_only_calls_with_its_id_and_credentials() {
        let running = Arc::new(Running::default());
        let key = |who, id: &str| Key {
            who,
            id: id.to_string(),
        };
        let mine = running.register(key(1, "7"));
        let other_id = running.register(key(1, "8"));
        let other_client = running.register(key(2, "7"));
        let Seen::Cancel(id) = seen(
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#,
        ) else {
            panic!("a cancellation");
        };
        running.cancel(&key(1, &id));
        assert!(mine.token().is_cancelled());
        assert!(!other_id.token().is_cancelled());
        assert!(!other_client.token().is_cancelled());
        drop((mine, other_id, other_client));
        assert_eq!(running.len(), 0);
    }

    #[test]
    fn calls_are_told_by_their_id() {
        assert!(matches!(
            seen(br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x"}}"#),
            Seen::Call(id) if id == r#""a""#
        ));
        assert!(matches!(
            seen(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            Seen::Other
        ));
        assert!(matches!(seen(b"not json"), Seen::Other));
    }
}
