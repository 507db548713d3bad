//! A request body must arrive in time: after its headers, a request's body gets
//! `[serve] header_timeout_ms` to arrive in full (else 408). Without it a client could send
//! the headers and then trickle (or withhold) the body, holding its connection — and its
//! place under `[serve] max_connections` — forever.
//!
//! A body over `[serve] max_request_bytes` is refused by rmcp (413, plain text); its answer
//! is replaced here by a JSON-RPC error with the request's id, read from the body's first
//! bytes as the stdio guard does ([`crate::mcp::server::guard::prefix_id`]).

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use hyper::body::Frame;
use parking_lot::Mutex;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

/// A body that fails once its deadline has passed before it ended.
struct DeadlineBody {
    inner: Body,
    deadline: Pin<Box<tokio::time::Sleep>>,
    timeout: Duration,
    /// Set when the deadline passed, so the answer can say so (rmcp would say 500).
    expired: Arc<AtomicBool>,
    /// The body's first bytes (at most `prefix_max`), for the id of a refusal.
    prefix: Arc<Mutex<Vec<u8>>>,
    /// [`PREFIX_BYTES`], or `max_request_bytes` when smaller (the part stdio reads too).
    prefix_max: usize,
}

/// How much of a body is kept to find its id when it is refused as too large.
const PREFIX_BYTES: usize = 64 * 1024;

/// What the body middleware enforces.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BodyLimits {
    /// `[serve] header_timeout_ms`.
    pub(crate) timeout: Duration,
    /// `[serve] max_request_bytes`.
    pub(crate) max_bytes: usize,
}

impl HttpBody for DeadlineBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            if let Some(Ok(data)) = frame.as_ref().map(|f| f.as_ref().map(Frame::data_ref))
                && let Some(data) = data
            {
                let mut prefix = self.prefix.lock();
                let room = self.prefix_max.saturating_sub(prefix.len()).min(data.len());
                prefix.extend_from_slice(&data[..room]);
            }
            return Poll::Ready(frame);
        }
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.expired.store(true, Ordering::SeqCst);
                Poll::Ready(Some(Err(axum::Error::new(too_slow(self.timeout)))))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

fn too_slow(timeout: Duration) -> String {
    format!(
        "the request body did not arrive within {} ms ([serve] header_timeout_ms)",
        timeout.as_millis()
    )
}

/// Middleware: every request's body must arrive within `timeout` of its headers; a body
/// refused as too large is answered with a JSON-RPC error carrying its id.
pub(crate) async fn deadline(
    State(limits): State<BodyLimits>,
    request: Request,
    next: Next,
) -> Response {
    if request.body().is_end_stream() {
        return next.run(request).await;
    }
    let timeout = limits.timeout;
    let expired = Arc::new(AtomicBool::new(false));
    let prefix = Arc::new(Mutex::new(Vec::new()));
    let request = request.map(|inner| {
        Body::new(DeadlineBody {
            inner,
            deadline: Box::pin(tokio::time::sleep(timeout)),
            timeout,
            expired: expired.clone(),
            prefix: prefix.clone(),
            prefix_max: PREFIX_BYTES.min(limits.max_bytes),
        })
    });
    let response = next.run(request).await;
    if expired.load(Ordering::SeqCst) {
        return plain(
            StatusCode::REQUEST_TIMEOUT,
            &serde_json::json!({"error": too_slow(timeout)}),
        );
    }
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return too_large(&prefix.lock(), limits.max_bytes);
    }
    response
}

/// Reads a whole body of at most `max` bytes within `timeout`; or the answer to give: 413
/// over `max` (a JSON-RPC error, with the request's id when its first bytes show it), 408
/// when it is too slow, 400 when the client broke it off.
pub(crate) async fn read_limited(
    body: Body,
    max: usize,
    timeout: Duration,
) -> Result<Bytes, Response> {
    let mut body = std::pin::pin!(body);
    let mut collected = Vec::new();
    let reading = async {
        while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
            let frame = frame.map_err(|e| (StatusCode::BAD_REQUEST, e.to_string()))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if data.len() > max.saturating_sub(collected.len()) {
                let room = max.saturating_sub(collected.len());
                collected.extend_from_slice(&data[..room]);
                return Err((StatusCode::PAYLOAD_TOO_LARGE, String::new()));
            }
            collected.extend_from_slice(&data);
        }
        Ok(())
    };
    let read = match tokio::time::timeout(timeout, reading).await {
        Ok(read) => read,
        Err(_) => Err((StatusCode::REQUEST_TIMEOUT, too_slow(timeout))),
    };
    match read {
        Ok(()) => Ok(Bytes::from(collected)),
        Err((StatusCode::PAYLOAD_TOO_LARGE, _)) => Err(too_large(&collected, max)),
        Err((status, message)) => Err(plain(status, &serde_json::json!({"error": message}))),
    }
}

/// 413 for a body over `max`: a JSON-RPC error, with the id its `prefix` shows (else null).
pub(crate) fn too_large(prefix: &[u8], max: usize) -> Response {
    let id = crate::mcp::server::guard::prefix_id(prefix);
    let message = format!(
        "Invalid Request: a message of more than {max} bytes is over the limit \
         ([serve] max_request_bytes)"
    );
    let error = serde_json::json!({"code": -32600, "message": message});
    let body = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{},\"error\":{error}}}",
        id.as_deref().unwrap_or("null")
    );
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn plain(status: StatusCode, body: &serde_json::Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
