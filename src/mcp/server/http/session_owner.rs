//! Sessions belong to the caller that opened them: a request naming a session another
//! caller (another token, another OAuth subject) opened is answered as for an unknown
//! session (404), so a leaked session id does not hand one caller another's stream, its
//! pending answers or its client's roots.

use crate::Caller;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use parking_lot::Mutex;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use std::collections::HashMap;
use std::sync::Arc;

/// The header naming a request's session.
const SESSION_HEADER: &str = "mcp-session-id";

/// Who opened each session.
pub(crate) struct Owners {
    /// Session id → the principal of its opener.
    by_session: Mutex<HashMap<String, String>>,
    /// rmcp's sessions: entries of closed sessions are dropped against it.
    manager: Arc<LocalSessionManager>,
    /// Past this many entries the closed sessions' are dropped.
    prune_at: usize,
}

impl Owners {
    /// Owners of the sessions of `manager`, of which at most `max_sessions` are open.
    pub(crate) fn new(manager: Arc<LocalSessionManager>, max_sessions: usize) -> Self {
        Self {
            by_session: Mutex::default(),
            manager,
            prune_at: max_sessions.saturating_mul(2).max(64),
        }
    }

    /// Records that the caller of `principal` opened `session`.
    async fn opened(&self, session: String, principal: String) {
        let full = {
            let mut owners = self.by_session.lock();
            owners.insert(session, principal);
            owners.len() > self.prune_at
        };
        if full {
            let open = self.manager.sessions.read().await;
            self.by_session
                .lock()
                .retain(|id, _| open.contains_key(id.as_str()));
        }
    }
}

/// Middleware in front of rmcp's service (session mode), inside the auth check.
pub(crate) async fn bind(
    State(owners): State<Arc<Owners>>,
    request: Request,
    next: Next,
) -> Response {
    let principal = request
        .extensions()
        .get::<Caller>()
        .cloned()
        .unwrap_or_else(Caller::anonymous)
        .principal();
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    if let Some(session) = session {
        let owner = owners.by_session.lock().get(&session).cloned();
        if owner.is_some_and(|owner| owner != principal) {
            tracing::warn!("HTTP: refused a request for a session another caller opened");
            let mut response = Response::new(Body::from("Not Found: Session not found"));
            *response.status_mut() = StatusCode::NOT_FOUND;
            return response;
        }
        return next.run(request).await;
    }
    let response = next.run(request).await;
    if let Some(opened) = response
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
    {
        owners.opened(opened.to_string(), principal).await;
    }
    response
}
