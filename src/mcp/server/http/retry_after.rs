//! `Retry-After` on a rate-limited call (docs/limits.md): a JSON answer (a stateless
//! server's, or a 2026-07-28 per-request answer) that is the JSON-RPC error
//! [`RATE_LIMITED`](super::super::gate::RATE_LIMITED) gets the header, in whole seconds
//! rounded up from its `data.retryAfterMs`. An SSE answer cannot: its headers left before
//! the call ran, and its clients read `data.retryAfterMs`.
//!
//! Only small JSON bodies of a known length are read (an error is a few hundred bytes);
//! anything else passes through untouched, never buffered.

use axum::body::{Body, HttpBody};
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

/// Longest body looked at: far over any refusal, far under anything worth streaming.
const MAX_INSPECTED: u64 = 16 * 1024;

/// Adds `Retry-After` to a rate-limited call's JSON answer.
pub(super) async fn add(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let small = response
        .body()
        .size_hint()
        .exact()
        .is_some_and(|len| len <= MAX_INSPECTED);
    if !is_json || !small {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    // The length is known and small: reading it whole is bounded.
    let Ok(bytes) = axum::body::to_bytes(body, MAX_INSPECTED as usize).await else {
        return Response::from_parts(parts, Body::empty());
    };
    if let Some(seconds) = retry_after_seconds(&bytes) {
        parts
            .headers
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// The whole seconds (rounded up) of a rate-limit error's `data.retryAfterMs`, if `body`
/// is one.
fn retry_after_seconds(body: &[u8]) -> Option<u64> {
    let message: serde_json::Value = serde_json::from_slice(body).ok()?;
    let error = message.get("error")?;
    if error.get("code")?.as_i64()? != i64::from(super::super::gate::RATE_LIMITED.0) {
        return None;
    }
    let ms = error.get("data")?.get("retryAfterMs")?.as_u64()?;
    Some(ms.div_ceil(1000))
}

#[cfg(test)]
mod tests {
    use super::retry_after_seconds;

    #[test]
    fn only_a_rate_limit_error_gets_seconds_rounded_up() {
        let limited = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32029,"message":"m","data":{"limit":"limits.default","retryAfterMs":1001}}}"#;
        assert_eq!(retry_after_seconds(limited), Some(2));
        let exact = br#"{"error":{"code":-32029,"data":{"retryAfterMs":3000}}}"#;
        assert_eq!(retry_after_seconds(exact), Some(3));
        let other = br#"{"error":{"code":-32603,"data":{"retryAfterMs":3000}}}"#;
        assert_eq!(retry_after_seconds(other), None);
        assert_eq!(retry_after_seconds(b"{\"result\":{}}"), None);
        assert_eq!(retry_after_seconds(b"not json"), None);
    }
}
