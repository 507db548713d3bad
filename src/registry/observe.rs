//! What a running call reports on the way: progress (`ctx.progress(done, total?, message?)`)
//! and log lines (`log.*` from its handler). The MCP server turns them into
//! `notifications/progress` and `notifications/message`; an embedder can pass its own
//! [`CallObserver`] in the [`CallContext`](super::CallContext).

use std::fmt;

/// One progress report of a handler.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// Work done so far (should grow with each report).
    pub done: f64,
    /// Total work, when known.
    pub total: Option<f64>,
    /// What is happening now.
    pub message: Option<String>,
}

impl Progress {
    /// A report of `done` out of `total`.
    pub fn new(done: f64, total: Option<f64>, message: Option<String>) -> Self {
        Self {
            done,
            total,
            message,
        }
    }
}

/// Severity of a handler's log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum LogLevel {
    /// `log.debug`.
    Debug,
    /// `log.info` and `print`.
    Info,
    /// `log.warn`.
    Warning,
    /// `log.error`.
    Error,
}

impl LogLevel {
    /// The name used in logs and the MCP protocol (`debug`, `info`, `warning`, `error`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Warning => "warning",
            Self::Error => "error",
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One line a handler logged while serving a call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LogLine {
    /// Its severity.
    pub level: LogLevel,
    /// The tool whose call logged it.
    pub tool: String,
    /// Where in the tool's code (`file:line`).
    pub at: String,
    /// The text.
    pub message: String,
}

/// Receives what a call reports while it runs. Both methods are called on the thread
/// running the handler and must not block; the default implementations ignore the report.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use toolhost::{CallContext, CallObserver, Progress};
///
/// #[derive(Default)]
/// struct Recorder(Mutex<Vec<f64>>);
/// impl CallObserver for Recorder {
///     fn progress(&self, progress: Progress) {
///         self.0.lock().unwrap().push(progress.done);
///     }
/// }
/// let ctx = CallContext::default().with_observer(Arc::new(Recorder::default()));
/// ```
pub trait CallObserver: Send + Sync {
    /// The handler reported progress.
    fn progress(&self, progress: Progress) {
        let _ = progress;
    }

    /// The handler logged a line (it is also logged through `tracing`).
    fn log(&self, line: LogLine) {
        let _ = line;
    }
}
