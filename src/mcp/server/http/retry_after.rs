//! `Retry-After` on a rate-limited call (docs/limits.md): a JSON answer (a stateless
//! server's, or a 2026-07-28 per-request answer) that is the JSON-RPC error
//! [`RATE_LIMITED`](super::super::gate::RATE_LIMITED) gets the header, in whole seconds
//! rounded up from its `data.retryAfterMs`. So does an SSE answer whose first event is
//! already there when its headers are about to leave (a 2026-07-28 request: rmcp waits for
//! the first message to choose the status): that event is looked at without waiting. An
//! SSE stream whose first event comes later (a session's call, which opens its stream
//! before the call runs) has sent its headers: its clients read `data.retryAfterMs`.
//!
//! Only small JSON bodies of a known length are read (an error is a few hundred bytes), and
//! only an SSE stream's first event if it is ready; anything else passes through
//! untouched, never buffered or waited for.

use axum::body::{Body, HttpBody};
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use futures::{FutureExt, StreamExt};

/// Longest body looked at: far over any refusal, far under anything worth streaming.
const MAX_INSPECTED: u64 = 16 * 1024;

/// Adds `Retry-After` to a rate-limited call's JSON answer, or its SSE answer whose first
/// event is ready.
pub(super) async fn add(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if content_type.starts_with("text/event-stream") {
        return add_to_stream(response);
    }
    let is_json = content_type.starts_with("application/json");
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

/// `Retry-After` on an SSE answer whose first event is a rate-limit error and is ready
/// now; the stream goes on unchanged either way (the event looked at goes first).
fn add_to_stream(response: Response) -> Response {
    let (mut parts, body) = response.into_parts();
    let mut events = body.into_data_stream();
    // Ready now or not looked at: never waits for the call.
    let Some(Some(first)) = events.next().now_or_never() else {
        // Pending: the stream is untouched (nothing was taken from it). Ended: empty.
        return Response::from_parts(parts, Body::from_stream(events));
    };
    if let Ok(event) = &first
        && let Some(seconds) = sse_retry_after_seconds(event)
    {
        parts
            .headers
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    let stream = futures::stream::once(std::future::ready(first)).chain(events);
    Response::from_parts(parts, Body::from_stream(stream))
}

/// [`retry_after_seconds`] of an SSE event's data (its `data:` lines joined).
fn sse_retry_after_seconds(event: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(event).ok()?;
    let data: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| data.strip_prefix(' ').unwrap_or(data))
        .collect();
    retry_after_seconds(data.join("\n").as_bytes())
}

/// The whole seconds (rounded up) of a rate-limit error's `data.retryAfterMs`, if `body`
/// is one. Every JSON answer passes here: one without `"error"` in it is no error and is
/// not parsed, and an error is read into just the members looked at (parsing each call's
/// result into a JSON tree was ≈11k instructions per HTTP call).
fn retry_after_seconds(body: &[u8]) -> Option<u64> {
    memchr::memmem::find(body, b"\"error\"")?;
    let message: RateLimited = serde_json::from_slice(body).ok()?;
    let error = message.error?;
    if error.code != i64::from(super::super::gate::RATE_LIMITED.0) {
        return None;
    }
    error.data?.retry_after_ms.map(|ms| ms.div_ceil(1000))
}

/// The members of a JSON-RPC error answer that say how long to wait.
#[derive(serde::Deserialize)]
struct RateLimited {
    error: Option<ErrorMembers>,
}

#[derive(serde::Deserialize)]
struct ErrorMembers {
    code: i64,
    data: Option<ErrorData>,
}

#[derive(serde::Deserialize)]
struct ErrorData {
    #[serde(rename = "retryAfterMs")]
    retry_after_ms: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::{retry_after_seconds, sse_retry_after_seconds};

    #[test]
    fn an_sse_events_data_is_read_whole() {
        let event = b"id: 0\nevent: message\ndata: {\"error\":{\"code\":-32029,\ndata: \"data\":{\"retryAfterMs\":1500}}}\n\n";
        assert_eq!(sse_retry_after_seconds(event), Some(2));
        assert_eq!(
            sse_retry_after_seconds(b"data:\n\n"),
            None,
            "a priming event"
        );
        assert_eq!(sse_retry_after_seconds(b": keep-alive\n\n"), None);
    }

    #[test]
    fn only_a_rate_limit_error_gets_seconds_rounded_up() {
        let limited = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32029,"message":"m","data":{"limit":"limits.default","retryAfterMs":1001}}}"#;
        assert_eq!(retry_after_seconds(limited), Some(2));
        let exact = br#"{"error":{"code":-32029,"data":{"retryAfterMs":3000}}}"#;
        assert_eq!(retry_after_seconds(exact), Some(3));
        let other = br#"{"error":{"code":-32603,"data":{"retryAfterMs":3000}}}"#;
        assert_eq!(retry_after_seconds(other), None);
        assert_eq!(retry_after_seconds(b"{\"result\":{}}"), None);
        let mentions =
            br#"{"result":{"content":[{"type":"text","text":"{\"error\":{\"code\":-32029}}"}]}}"#;
        assert_eq!(
            retry_after_seconds(mentions),
            None,
            "a result quoting an error"
        );
        assert_eq!(retry_after_seconds(b"not json"), None);
    }
}
