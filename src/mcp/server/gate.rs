//! Admission of MCP tool calls: at most `[serve] max_calls` run at once over all sessions
//! and `max_session_calls` per session; excess calls wait in a queue bounded by
//! `max_queued_calls`, past which a call gets a clear JSON-RPC error instead of waiting
//! (never a dropped connection). The gate also drains calls at shutdown.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tokio_util::task::task_tracker::TaskTrackerToken;

/// Default `[serve] max_calls`.
pub(crate) const DEFAULT_MAX_CALLS: usize = 64;
/// Default `[serve] max_session_calls`.
pub(crate) const DEFAULT_MAX_SESSION_CALLS: usize = 16;
/// Default `[serve] max_queued_calls`.
pub(crate) const DEFAULT_MAX_QUEUED_CALLS: usize = 1024;
/// How long calls cancelled at the end of the drain period get to send their answer.
const CANCELLED_GRACE: Duration = Duration::from_secs(3);

/// The gate all sessions of one server share.
pub(crate) struct CallGate {
    overall: Arc<Semaphore>,
    per_session: usize,
    queued: AtomicUsize,
    max_queued: usize,
    tracker: TaskTracker,
    /// Cancelled when the drain period ends: calls still running end `cancelled`.
    drain: CancellationToken,
    /// Cancelled when shutdown begins: new calls are refused.
    closing: CancellationToken,
}

/// A call let through; dropping it frees its places.
pub(crate) struct Admitted {
    _overall: OwnedSemaphorePermit,
    _session: OwnedSemaphorePermit,
    _running: TaskTrackerToken,
}

/// Why the gate did not let a call through (the client reads it as an internal error).
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refused {
    /// Shutdown has begun: no call starts any more.
    #[error("the server is shutting down; the call was not started")]
    ShuttingDown,
    /// The queue of calls waiting for a place is full (`[serve] max_queued_calls`).
    #[error(
        "the server is busy: {waiting} calls are waiting ([serve] max_queued_calls); retry later"
    )]
    Busy {
        /// How many calls were waiting.
        waiting: usize,
    },
    /// The session ended while the call waited.
    #[error("the session is closing")]
    SessionClosing,
    /// The server ended while the call waited.
    #[error("the server is closing")]
    ServerClosing,
    /// The tool `needs` client capabilities the client did not declare: JSON-RPC error
    /// -32021 (HTTP 400 on 2026-07-28), naming them in `data.requiredCapabilities`.
    #[error("{message}")]
    MissingCapability {
        /// What the client reads.
        message: String,
        /// The capabilities it lacks.
        needs: Vec<crate::Capability>,
    },
    /// A `[limits]` rate limit refused the call: JSON-RPC error [`RATE_LIMITED`] naming
    /// the limit, with `data.limit` and `data.retryAfterMs` (HTTP adds `Retry-After`).
    #[error("{message}")]
    RateLimited {
        /// What the client reads.
        message: String,
        /// The limit's key (`limits.tools.search`).
        limit: String,
        /// When to retry, in milliseconds.
        retry_after_ms: u64,
    },
    /// A multi-round call's `requestState` or `inputResponses` is refused (the message
    /// says why): invalid params.
    #[error("{0}")]
    InputState(String),
}

/// The JSON-RPC error code of a call over a rate limit (implementation-defined server
/// error range).
pub(crate) const RATE_LIMITED: rmcp::model::ErrorCode = rmcp::model::ErrorCode(-32029);

impl Refused {
    /// The refusal a call's result stands for, when the MCP server answers it with a
    /// JSON-RPC error instead of a result (missing capability, rate limit).
    pub(crate) fn of_result(result: &crate::ToolResult) -> Option<Self> {
        let error = result.error()?;
        match error.kind {
            crate::ErrorType::MissingCapability => Some(Self::MissingCapability {
                message: error.message.clone(),
                needs: error.needs.clone(),
            }),
            crate::ErrorType::RateLimited => Some(Self::RateLimited {
                message: error.message.clone(),
                limit: error.limit.clone().unwrap_or_default(),
                retry_after_ms: error.retry_after_ms.unwrap_or(0),
            }),
            _ => None,
        }
    }

    /// The JSON-RPC error the refusal is answered with.
    pub(crate) fn to_error(&self) -> rmcp::ErrorData {
        use rmcp::model::ErrorCode;
        match self {
            Self::MissingCapability { message, needs } => {
                let required: serde_json::Map<String, serde_json::Value> = needs
                    .iter()
                    .map(|need| (need.as_str().to_string(), serde_json::json!({})))
                    .collect();
                rmcp::ErrorData::new(
                    ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                    message.clone(),
                    Some(serde_json::json!({ "requiredCapabilities": required })),
                )
            }
            Self::RateLimited {
                message,
                limit,
                retry_after_ms,
            } => rmcp::ErrorData::new(
                RATE_LIMITED,
                message.clone(),
                Some(serde_json::json!({ "limit": limit, "retryAfterMs": retry_after_ms })),
            ),
            Self::InputState(message) => rmcp::ErrorData::invalid_params(message.clone(), None),
            other => rmcp::ErrorData::internal_error(other.to_string(), None),
        }
    }
}

impl CallGate {
    /// A gate with these limits (each at least 1).
    pub(crate) fn new(max_calls: usize, per_session: usize, max_queued: usize) -> Self {
        Self {
            overall: Arc::new(Semaphore::new(max_calls.max(1))),
            per_session: per_session.max(1),
            queued: AtomicUsize::new(0),
            max_queued,
            tracker: TaskTracker::new(),
            drain: CancellationToken::new(),
            closing: CancellationToken::new(),
        }
    }

    /// The most calls of one session that can be running or queued at once.
    pub(crate) fn session_capacity(&self) -> usize {
        self.per_session.saturating_add(self.max_queued)
    }

    /// The semaphore of a new session.
    pub(crate) fn session_slots(&self) -> Arc<Semaphore> {
        Arc::new(Semaphore::new(self.per_session))
    }

    /// Cancelled when shutdown begins (long-lived requests such as subscriptions end then).
    pub(crate) fn closing(&self) -> CancellationToken {
        self.closing.clone()
    }

    /// A token for one call: cancelled when the drain period ends.
    pub(crate) fn call_token(&self) -> CancellationToken {
        self.drain.child_token()
    }

    /// Lets a call through once a place is free in its session and overall; refuses it
    /// when the server is shutting down or the queue is full.
    pub(crate) async fn admit(&self, session: &Arc<Semaphore>) -> Result<Admitted, Refused> {
        if self.closing.is_cancelled() {
            return Err(Refused::ShuttingDown);
        }
        let running = self.tracker.token();
        // Both places now, or neither kept: a call that waited for its session's place while
        // holding an overall one (taken here when only that was free) deadlocked with the
        // call given the session's place, which then waited for an overall one — in a burst
        // of calls, every overall place ended up held by calls queued for the session.
        // (A temporary, so what was taken is dropped right after this statement.)
        if let (Ok(session), Ok(overall)) = (
            session.clone().try_acquire_owned(),
            self.overall.clone().try_acquire_owned(),
        ) {
            return Ok(Admitted {
                _overall: overall,
                _session: session,
                _running: running,
            });
        }
        let waiting = self.queued.fetch_add(1, Ordering::SeqCst);
        let _leave_queue = QueueSlot(&self.queued);
        if waiting >= self.max_queued {
            return Err(Refused::Busy { waiting });
        }
        let session = session
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| Refused::SessionClosing)?;
        let overall = self
            .overall
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| Refused::ServerClosing)?;
        Ok(Admitted {
            _overall: overall,
            _session: session,
            _running: running,
        })
    }

    /// Shutdown: refuses new calls, lets running ones finish for up to `period`, then
    /// cancels the rest (they answer `cancelled`) and waits briefly for their answers.
    pub(crate) async fn drain(&self, period: Duration) {
        self.closing.cancel();
        self.tracker.close();
        if tokio::time::timeout(period, self.tracker.wait())
            .await
            .is_ok()
        {
            return;
        }
        tracing::warn!(
            "{} calls still running after the drain period: cancelling them",
            self.tracker.len()
        );
        self.drain.cancel();
        let _ = tokio::time::timeout(CANCELLED_GRACE, self.tracker.wait()).await;
    }
}

/// Leaves the queue when dropped (also when the waiting call is abandoned).
struct QueueSlot<'a>(&'a AtomicUsize);

impl Drop for QueueSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_queue_refuses_with_a_clear_error() {
        let gate = CallGate::new(1, 1, 0);
        let session = gate.session_slots();
        let _first = gate.admit(&session).await.unwrap();
        let refused = gate.admit(&session).await.err().unwrap();
        assert!(
            refused.to_string().contains("max_queued_calls"),
            "{refused}"
        );
    }

    #[tokio::test]
    async fn excess_calls_wait_for_a_place() {
        let gate = Arc::new(CallGate::new(1, 1, 8));
        let session = gate.session_slots();
        let first = gate.admit(&session).await.unwrap();
        let waiter = {
            let (gate, session) = (gate.clone(), session.clone());
            tokio::spawn(async move { gate.admit(&session).await.map(|_| ()) })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(first);
        assert!(waiter.await.unwrap().is_ok());
    }

    /// Polls `future` once.
    async fn poll_once<F: std::future::Future + Unpin>(
        future: &mut F,
    ) -> std::task::Poll<F::Output> {
        std::future::poll_fn(|cx| std::task::Poll::Ready(std::pin::Pin::new(&mut *future).poll(cx)))
            .await
    }

    #[tokio::test]
    async fn a_queued_call_holds_no_place_while_it_waits() {
        let gate = CallGate::new(1, 1, 8);
        let session = gate.session_slots();
        let first = gate.admit(&session).await.unwrap();
        let mut second = Box::pin(gate.admit(&session));
        assert!(poll_once(&mut second).await.is_pending());
        // The session's place goes to `second`; the overall place is free until it looks.
        drop(first);
        let mut third = Box::pin(gate.admit(&session));
        assert!(
            poll_once(&mut third).await.is_pending(),
            "queued behind second"
        );
        let admitted = tokio::time::timeout(Duration::from_secs(5), second).await;
        assert!(
            matches!(admitted, Ok(Ok(_))),
            "the call given the session's place gets the overall one"
        );
    }

    #[tokio::test]
    async fn draining_refuses_new_calls_and_cancels_stragglers() {
        let gate = CallGate::new(4, 4, 8);
        let session = gate.session_slots();
        let running = gate.admit(&session).await.unwrap();
        let token = gate.call_token();
        // A call that only ends when cancelled.
        let call = {
            let token = token.clone();
            tokio::spawn(async move {
                token.cancelled().await;
                drop(running);
            })
        };
        gate.drain(Duration::from_millis(10)).await;
        assert!(token.is_cancelled());
        assert!(gate.admit(&session).await.is_err());
        call.await.unwrap();
    }
}
