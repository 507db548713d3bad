//! The bound on HTTP sessions: `[serve] max_sessions` open at once (each holds a server
//! handler, channels and buffers: without a bound, 20,000 `initialize`s took the server from
//! 15 MB to over 1.1 GB), and `[serve] session_idle_ms`, after which a session without
//! traffic is closed (rmcp's session keep-alive; its id then gets 404 and the client starts
//! a new session).
//!
//! Only a `POST` without `Mcp-Session-Id` can create a session (an `initialize`). Such a
//! request holds a reservation while rmcp handles it, so open sessions plus reservations
//! never exceed the cap, however many arrive at once. When there is no room, the request's
//! body is read: an `initialize` gets 503 with a JSON-RPC error naming the setting (and its
//! id); anything else cannot create a session and goes on to rmcp. Open sessions are never
//! closed to make room: they keep working.

use super::body::read_limited;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Default `[serve] max_sessions`.
pub(crate) const DEFAULT_MAX_SESSIONS: usize = 1000;
/// Default `[serve] session_idle_ms` (rmcp's own default keep-alive).
pub(crate) const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(300);

/// JSON-RPC "server error" (implementation-defined range): no room for a session.
const SESSION_CAP_REACHED: i64 = -32000;

/// The session manager and what the cap check needs.
pub(crate) struct Sessions {
    /// rmcp's in-memory sessions (its map is what is counted).
    pub(crate) manager: Arc<LocalSessionManager>,
    max: usize,
    /// Requests that may create a session and are being handled.
    reserved: AtomicUsize,
    /// Longest body read to tell an `initialize` (`[serve] max_request_bytes`).
    max_body: usize,
    /// How long that body may take to arrive (`[serve] header_timeout_ms`).
    body_timeout: Duration,
}

impl Sessions {
    /// A session manager whose sessions close after `idle` without traffic, at most `max`
    /// open at once.
    pub(crate) fn new(max: usize, idle: Duration, max_body: usize, body_timeout: Duration) -> Self {
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(idle);
        Sessions {
            manager: Arc::new(manager),
            max: max.max(1),
            reserved: AtomicUsize::new(0),
            max_body,
            body_timeout,
        }
    }

    /// Takes a place for a request that may create a session; `None` when every place is
    /// taken by open sessions and other such requests.
    async fn reserve(self: &Arc<Self>) -> Option<Reservation> {
        let open = self.manager.sessions.read().await.len();
        let mut reserved = self.reserved.load(Ordering::SeqCst);
        loop {
            if open.saturating_add(reserved) >= self.max {
                return None;
            }
            match self.reserved.compare_exchange(
                reserved,
                reserved + 1,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return Some(Reservation(self.clone())),
                Err(now) => reserved = now,
            }
        }
    }
}

/// A place held while a session-creating request is handled.
struct Reservation(Arc<Sessions>);

impl Drop for Reservation {
    fn drop(&mut self) {
        self.0.reserved.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Middleware in front of rmcp's service (session mode): the session cap.
pub(crate) async fn cap(
    State(sessions): State<Arc<Sessions>>,
    request: Request,
    next: Next,
) -> Response {
    let may_create =
        request.method() == Method::POST && !request.headers().contains_key("mcp-session-id");
    if !may_create {
        return next.run(request).await;
    }
    if let Some(reservation) = sessions.reserve().await {
        let response = next.run(request).await;
        // The session (if one was made) is in rmcp's map before its answer is.
        drop(reservation);
        return response;
    }
    // No room: only an `initialize` is refused; read the body to tell.
    let (parts, body) = request.into_parts();
    let bytes = match read_limited(body, sessions.max_body, sessions.body_timeout).await {
        Ok(bytes) => bytes,
        Err(refusal) => return refusal,
    };
    // Fail closed: only a body that is clearly some other request passes (rmcp parses it
    // again with its own parser, which must not find an `initialize` this one missed).
    if let Some(id) = may_create_session(&bytes) {
        tracing::warn!(
            "refused a new MCP session: {} sessions are open ([serve] max_sessions)",
            sessions.max
        );
        return refused(&id, sessions.max);
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// The id (raw JSON; `null` when unknown) of a body that is an `initialize` or cannot be
/// told apart from one (it does not read as one JSON-RPC request with another method);
/// `None` for a body that is clearly another request.
fn may_create_session(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow)]
        method: std::borrow::Cow<'a, str>,
    }
    match serde_json::from_slice::<Envelope<'_>>(body) {
        Ok(envelope) if envelope.method != "initialize" => None,
        _ => Some(initialize_id(body).unwrap_or_else(|| "null".to_string())),
    }
}

/// The id (raw JSON) of an `initialize` request, if `body` is one.
fn initialize_id(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
        #[serde(borrow)]
        id: Option<&'a serde_json::value::RawValue>,
    }
    let envelope: Envelope<'_> = serde_json::from_slice(body).ok()?;
    (envelope.method.as_deref() == Some("initialize")).then(|| {
        envelope
            .id
            .map_or("null".to_string(), |id| id.get().to_string())
    })
}

/// 503 with a JSON-RPC error for the refused `initialize`.
fn refused(raw_id: &str, max: usize) -> Response {
    let error = serde_json::json!({
        "code": SESSION_CAP_REACHED,
        "message": format!(
            "the server has no room for a new session: {max} sessions are open \
             ([serve] max_sessions); retry later, or end an unused session (HTTP DELETE)"
        ),
    });
    let body = format!("{{\"jsonrpc\":\"2.0\",\"id\":{raw_id},\"error\":{error}}}");
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_initialize_is_told_apart() {
        let init = br#"{"jsonrpc":"2.0","id":"a\"1","method":"initialize","params":{}}"#;
        assert_eq!(initialize_id(init).as_deref(), Some(r#""a\"1""#));
        assert_eq!(
            initialize_id(br#"{"jsonrpc":"2.0","method":"initialize"}"#).as_deref(),
            Some("null")
        );
        assert_eq!(
            initialize_id(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            None
        );
        assert_eq!(initialize_id(b"not json"), None);
    }

    #[test]
    fn at_the_cap_only_a_body_that_is_clearly_another_request_passes() {
        assert_eq!(
            may_create_session(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            None
        );
        for body in [
            &br#"{"jsonrpc":"2.0","id":7,"method":"initialize"}"#[..],
            br#"{"jsonrpc":"2.0","id":7,"method":"ping","method":"initialize"}"#,
            br#"[{"jsonrpc":"2.0","id":7,"method":"initialize"}]"#,
            b"not json",
            br#"{"jsonrpc":"2.0","id":7}"#,
        ] {
            assert!(
                may_create_session(body).is_some(),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn the_refusal_is_a_json_rpc_error_with_the_id() {
        let response = refused("18446744073709551615", 3);
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    }
}
