//! The bearer-token check in front of `/mcp`.
//!
//! A refusal is an MCP client's kind of answer: 401 with `WWW-Authenticate: Bearer` and a
//! JSON-RPC error body (`-32001`, "missing bearer token" / "invalid bearer token") carrying
//! the request's id when the body's first bytes show it, so a client library reports the
//! message instead of a bare "error response". Where the server expects the token from (an
//! environment variable's name) is the operator's business: it goes to the server's log at
//! warn, never to an unauthenticated caller.

use axum::body::{Body, HttpBody};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;
use std::time::Duration;
use subtle::ConstantTimeEq;

/// The JSON-RPC error code of an unauthenticated request (the server-defined range; the
/// code MCP SDKs use for authentication failures).
pub(crate) const UNAUTHORIZED: i64 = -32001;

/// At most this much of a refused body is read to find the request's id.
const ID_PREFIX_BYTES: usize = 4096;

/// The auth check's state.
#[derive(Clone)]
pub(crate) struct Auth {
    /// The token clients must send (`None`: no check).
    pub(crate) token: Option<Arc<[u8]>>,
    /// Where the token comes from (e.g. an environment variable's name), for the log.
    pub(crate) source: Arc<str>,
    /// How long a refused request's body gets to show its id (`[serve] header_timeout_ms`).
    pub(crate) body_timeout: Duration,
    /// `[serve] max_request_bytes`: never read more of a refused body than that.
    pub(crate) max_bytes: usize,
}

/// Why a request is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refusal {
    Missing,
    Invalid,
}

impl Refusal {
    fn message(self) -> &'static str {
        match self {
            Self::Missing => "missing bearer token",
            Self::Invalid => "invalid bearer token",
        }
    }
}

/// Middleware: lets a request through only with the right bearer token (when one is
/// configured).
pub(crate) async fn authenticate(
    State(auth): State<Auth>,
    request: Request,
    next: Next,
) -> Response {
    let Some(expected) = &auth.token else {
        return next.run(request).await;
    };
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| {
            let (scheme, token) = value.split_once(' ')?;
            scheme
                .eq_ignore_ascii_case("bearer")
                .then_some(token.trim())
        });
    let refusal = match given {
        None => Refusal::Missing,
        Some(token) if bool::from(token.as_bytes().ct_eq(expected)) => {
            return next.run(request).await;
        }
        Some(_) => Refusal::Invalid,
    };
    match (&*auth.source, refusal) {
        ("", _) => tracing::warn!("HTTP: refused a request: {}", refusal.message()),
        (source, Refusal::Missing) => tracing::warn!(
            "HTTP: refused a request without 'Authorization: Bearer <token>' (the token is \
             in ${source})"
        ),
        (source, Refusal::Invalid) => {
            tracing::warn!("HTTP: refused a request whose bearer token is not the one in ${source}")
        }
    }
    let id = request_id(request.into_body(), &auth).await;
    refused(refusal, id.as_deref())
}

/// The id of the JSON-RPC request in `body`, read from its first bytes (at most
/// [`ID_PREFIX_BYTES`], within the body deadline), if they show it.
async fn request_id(body: Body, auth: &Auth) -> Option<String> {
    let max = ID_PREFIX_BYTES.min(auth.max_bytes);
    let mut body = std::pin::pin!(body);
    let mut prefix = Vec::new();
    let reading = async {
        while prefix.len() < max
            && let Some(Ok(frame)) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await
        {
            if let Ok(data) = frame.into_data() {
                let room = max.saturating_sub(prefix.len()).min(data.len());
                prefix.extend_from_slice(&data[..room]);
            }
        }
    };
    // A body that does not arrive in time is answered with what came of it.
    let _ = tokio::time::timeout(auth.body_timeout, reading).await;
    crate::mcp::server::guard::prefix_id(&prefix)
}

/// The 401 answer: `WWW-Authenticate: Bearer` and a JSON-RPC error with `raw_id` (the id's
/// JSON text as the client wrote it; `null` when unknown).
fn refused(refusal: Refusal, raw_id: Option<&str>) -> Response {
    let error = serde_json::json!({"code": UNAUTHORIZED, "message": refusal.message()});
    let body = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{},\"error\":{error}}}",
        raw_id.unwrap_or("null")
    );
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::UNAUTHORIZED;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_a_json_rpc_error_with_the_id() {
        let response = refused(Refusal::Invalid, Some("\"a\""));
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(response.headers()[header::WWW_AUTHENTICATE], "Bearer");
        let missing = refused(Refusal::Missing, None);
        assert_eq!(missing.headers()[header::WWW_AUTHENTICATE], "Bearer");
    }
}
