//! A call's progress reports and log lines as MCP notifications to the client that made
//! the call: `notifications/progress` when the request carried a `progressToken`
//! (throttled to at most one per [`PROGRESS_INTERVAL`], the last report always sent), and
//! `notifications/message` for log lines at or above the session's level (logger = the
//! tool's name). Everything is sent before the call's result.

// Logging and roots are deprecated by SEP-2577 from protocol 2026-07-28 on; the clients of
// today negotiate earlier versions, where they are part of the protocol.
#![allow(deprecated)]

use crate::{CallObserver, LogLevel, LogLine, Progress};
use parking_lot::Mutex;
use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use rmcp::{Peer, RoleServer};
use serde::Serialize;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// Log lines of one call waiting to be sent; more are dropped.
const MAX_QUEUED_LOG_LINES: usize = 256;

/// The shortest gap between two progress notifications of one call (≤ 20 per second).
pub(crate) const PROGRESS_INTERVAL: Duration = Duration::from_millis(50);

/// Where a call's notifications go: through rmcp to its peer, or (a call the stdio guard
/// answers itself, see `guard::direct_call`) as lines straight to the client's output.
#[derive(Clone)]
pub(crate) enum Sink {
    /// rmcp's handle on the client.
    Peer(Peer<RoleServer>),
    /// The guard's lines to the client.
    Lines(super::lines::Lines),
}

impl Sink {
    async fn notify_progress(&self, param: ProgressNotificationParam) -> Result<(), Unsent> {
        match self {
            Self::Peer(peer) => Ok(peer.notify_progress(param).await?),
            Self::Lines(lines) => send_line(lines, "notifications/progress", param).await,
        }
    }

    async fn notify_logging_message(
        &self,
        param: LoggingMessageNotificationParam,
    ) -> Result<(), Unsent> {
        match self {
            Self::Peer(peer) => Ok(peer.notify_logging_message(param).await?),
            Self::Lines(lines) => send_line(lines, "notifications/message", param).await,
        }
    }
}

/// A notification as one JSON-RPC line, the same rmcp writes.
async fn send_line(
    lines: &super::lines::Lines,
    method: &str,
    params: impl Serialize,
) -> Result<(), Unsent> {
    let line = serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params});
    lines
        .send(line.to_string())
        .await
        .map_err(|_| Unsent::Closed)
}

/// Why a notification did not go out (logged at debug: the call goes on without it).
#[derive(Debug, thiserror::Error)]
enum Unsent {
    /// rmcp could not send it to the peer.
    #[error(transparent)]
    Peer(#[from] rmcp::service::ServiceError),
    /// The guard's output queue is gone.
    #[error("the client's output is closed")]
    Closed,
}

/// The observer handed to the pipeline for one MCP call. The forwarding task starts with
/// the first report that goes out, so a call that reports nothing costs no task.
struct Forwarding {
    sink: Sink,
    token: Option<ProgressToken>,
    minimum: Option<LogLevel>,
    channels: OnceLock<Channels>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

struct Channels {
    progress: watch::Sender<Option<Progress>>,
    logs: mpsc::Sender<LogLine>,
}

impl Forwarding {
    fn channels(&self) -> &Channels {
        self.channels.get_or_init(|| {
            let (progress, progress_rx) = watch::channel(None);
            let (logs, logs_rx) = mpsc::channel(MAX_QUEUED_LOG_LINES);
            let task = tokio::spawn(forward(
                self.sink.clone(),
                self.token.clone(),
                progress_rx,
                logs_rx,
            ));
            *self.task.lock() = Some(task);
            Channels { progress, logs }
        })
    }
}

impl CallObserver for Forwarding {
    fn progress(&self, progress: Progress) {
        if self.token.is_some() {
            self.channels().progress.send_replace(Some(progress));
        }
    }

    fn log(&self, line: LogLine) {
        if self.minimum.is_some_and(|minimum| line.level >= minimum) {
            // A handler logging faster than the client reads loses lines beyond the queue
            // (they are still in the server's own log), never the server's memory.
            let _ = self.channels().logs.try_send(line);
        }
    }
}

/// The observer of one call (which holds the task that forwards what it hears).
pub(crate) struct CallReports {
    observer: Arc<Forwarding>,
}

impl CallReports {
    /// Reports to `sink` for a call with `token` (progress wanted) whose session logs at
    /// `minimum` and above (`None`: logging off); `None` when there is nothing to forward.
    pub(crate) fn start(
        sink: Sink,
        token: Option<ProgressToken>,
        minimum: Option<LogLevel>,
    ) -> Option<Self> {
        if token.is_none() && minimum.is_none() {
            return None;
        }
        let observer = Arc::new(Forwarding {
            sink,
            token,
            minimum,
            channels: OnceLock::new(),
            task: Mutex::new(None),
        });
        Some(Self { observer })
    }

    /// The observer to put in the call's context.
    pub(crate) fn observer(&self) -> Arc<dyn CallObserver> {
        self.observer.clone()
    }

    /// Waits until everything reported has been sent (call it once the call has ended).
    pub(crate) async fn finish(self) {
        // Dropping the last observer closes the channels; the forwarder then sends what is
        // left and ends. (A handler that leaked its observer elsewhere is cut off below; a
        // forwarder it starts only after this ends with the channels, unawaited.)
        let forwarder = self.observer.task.lock().take();
        drop(self.observer);
        let Some(mut forwarder) = forwarder else {
            return;
        };
        if tokio::time::timeout(Duration::from_secs(2), &mut forwarder)
            .await
            .is_err()
        {
            forwarder.abort();
        }
    }
}

async fn forward(
    sink: Sink,
    token: Option<ProgressToken>,
    mut progress: watch::Receiver<Option<Progress>>,
    mut logs: mpsc::Receiver<LogLine>,
) {
    let mut progress_open = token.is_some();
    let mut logs_open = true;
    let mut last_sent = tokio::time::Instant::now() - PROGRESS_INTERVAL;
    while progress_open || logs_open {
        tokio::select! {
            changed = progress.changed(), if progress_open => {
                // An error means the call ended and every report has been seen (a report
                // not yet seen is returned first).
                if changed.is_err() {
                    progress_open = false;
                    continue;
                }
                tokio::time::sleep_until(last_sent + PROGRESS_INTERVAL).await;
                send_progress(&sink, &token, &mut progress).await;
                last_sent = tokio::time::Instant::now();
            }
            line = logs.recv(), if logs_open => match line {
                Some(line) => send_log(&sink, line).await,
                None => logs_open = false,
            },
        }
    }
}

async fn send_progress(
    sink: &Sink,
    token: &Option<ProgressToken>,
    progress: &mut watch::Receiver<Option<Progress>>,
) {
    let Some(token) = token.clone() else { return };
    let Some(report) = progress.borrow_and_update().clone() else {
        return;
    };
    let mut param = ProgressNotificationParam::new(token, report.done);
    param.total = report.total;
    param.message = report.message;
    if let Err(e) = sink.notify_progress(param).await {
        tracing::debug!("cannot send a progress notification: {e}");
    }
}

async fn send_log(sink: &Sink, line: LogLine) {
    let level = match line.level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Warning => LoggingLevel::Warning,
        _ => LoggingLevel::Error,
    };
    let mut param = LoggingMessageNotificationParam::new(
        level,
        serde_json::json!({"message": line.message, "at": line.at}),
    );
    param.logger = Some(line.tool);
    let sent = sink.notify_logging_message(param).await;
    if let Err(e) = sent {
        tracing::debug!("cannot send a log notification: {e}");
    }
}

/// The toolhost level at or above which an MCP `logging/setLevel` level lets lines through;
/// `None` for a level above `error` (`critical`, `alert`, `emergency`): a tool's lines are
/// at most `error`, so none goes out.
pub(crate) fn minimum_level(level: LoggingLevel) -> Option<LogLevel> {
    match level {
        LoggingLevel::Debug => Some(LogLevel::Debug),
        LoggingLevel::Info | LoggingLevel::Notice => Some(LogLevel::Info),
        LoggingLevel::Warning => Some(LogLevel::Warning),
        LoggingLevel::Error => Some(LogLevel::Error),
        LoggingLevel::Critical | LoggingLevel::Alert | LoggingLevel::Emergency => None,
    }
}
