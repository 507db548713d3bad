//! A server's progress and log notifications during one of our calls, relayed to the call
//! that made it: its observer (`ctx.observer`), which for a call from our own MCP client
//! turns them into that client's `notifications/progress` (with the client's own progress
//! token) and `notifications/message`.
//!
//! Progress is matched exactly: each call that has an observer sends a progress token of
//! its own (`toolhost-N`), and a report with that token goes to that call only. Log lines
//! carry no request in the session protocol, so one is relayed only while exactly one
//! relayed call of the server runs (it can then only be that call's); with several in
//! flight a line cannot be told apart and is left in the server's own log (at debug), never
//! handed to a caller it may not belong to.

// Logging is deprecated by SEP-2577 from protocol 2026-07-28 on; servers of today still send it.
#![allow(deprecated)]

use crate::registry::{CallObserver, LogLevel, LogLine, Progress};
use parking_lot::Mutex;
use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, NumberOrString, ProgressNotificationParam,
    ProgressToken,
};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// One relayed call: where its reports go, and the tool's name (as registered) for its log
/// lines.
struct Relayed {
    observer: Arc<dyn CallObserver>,
    tool: String,
}

/// The calls of one server whose notifications are relayed, by progress token.
#[derive(Default)]
pub(crate) struct Relays {
    next: AtomicU64,
    calls: Mutex<HashMap<String, Relayed>>,
}

/// A call's place in [`Relays`]: its progress token; dropping it ends the relay.
pub(crate) struct Registration {
    relays: Arc<Relays>,
    key: String,
    token: ProgressToken,
}

impl Registration {
    /// The progress token to send with the call.
    pub(crate) fn token(&self) -> ProgressToken {
        self.token.clone()
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.relays.calls.lock().remove(&self.key);
    }
}

impl Relays {
    /// Relays the notifications of a call of `tool` to `observer` until the returned
    /// registration is dropped.
    pub(crate) fn register(
        self: &Arc<Self>,
        observer: Arc<dyn CallObserver>,
        tool: &str,
    ) -> Registration {
        let serial = self.next.fetch_add(1, Ordering::Relaxed);
        let key = format!("toolhost-{serial}");
        let token = ProgressToken(NumberOrString::String(Arc::from(key.as_str())));
        let relayed = Relayed {
            observer,
            tool: tool.to_string(),
        };
        self.calls.lock().insert(key.clone(), relayed);
        Registration {
            relays: self.clone(),
            key,
            token,
        }
    }

    /// A progress notification from the server: to the call whose token it carries.
    pub(crate) fn progress(&self, params: ProgressNotificationParam) {
        let NumberOrString::String(key) = &params.progress_token.0 else {
            return; // our tokens are strings: not one of ours
        };
        let observer = match self.calls.lock().get(&**key) {
            Some(relayed) => relayed.observer.clone(),
            None => return, // a call that has ended, or a token we never sent
        };
        observer.progress(Progress::new(params.progress, params.total, params.message));
    }

    /// A log notification from server `server`: to the one relayed call running, if there
    /// is exactly one.
    pub(crate) fn log(&self, server: &str, params: LoggingMessageNotificationParam) {
        let target = {
            let calls = self.calls.lock();
            let mut running = calls.values();
            match (running.next(), running.next()) {
                (Some(only), None) => Some((only.observer.clone(), only.tool.clone())),
                _ => None,
            }
        };
        let message = match params.data {
            Value::String(text) => text,
            other => other.to_string(),
        };
        let Some((observer, tool)) = target else {
            tracing::debug!(target: "toolhost::mcp_client", server, "log line not relayed (no single call running): {message}");
            return;
        };
        observer.log(LogLine {
            level: level(params.level),
            tool,
            at: params.logger.unwrap_or_else(|| format!("mcp:{server}")),
            message,
        });
    }
}

/// The toolhost level of an MCP log level.
fn level(level: LoggingLevel) -> LogLevel {
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info | LoggingLevel::Notice => LogLevel::Info,
        LoggingLevel::Warning => LogLevel::Warning,
        _ => LogLevel::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Heard(Mutex<Vec<String>>);

    impl CallObserver for Heard {
        fn progress(&self, progress: Progress) {
            self.0.lock().push(format!("progress {}", progress.done));
        }
        fn log(&self, line: LogLine) {
            self.0.lock().push(format!("log {}", line.message));
        }
    }

    #[test]
    fn progress_goes_by_token_and_logs_only_to_a_lone_call() {
        let relays = Arc::new(Relays::default());
        let first = Arc::new(Heard::default());
        let second = Arc::new(Heard::default());
        let one = relays.register(first.clone(), "mcp__s__a");
        relays.log(
            "s",
            LoggingMessageNotificationParam::new(LoggingLevel::Info, "alone".into()),
        );
        let two = relays.register(second.clone(), "mcp__s__b");
        relays.progress(ProgressNotificationParam::new(two.token(), 2.0));
        relays.log(
            "s",
            LoggingMessageNotificationParam::new(LoggingLevel::Info, "both".into()),
        );
        drop(two);
        relays.progress(ProgressNotificationParam::new(one.token(), 1.0));
        drop(one);
        assert_eq!(*first.0.lock(), ["log alone", "progress 1"]);
        assert_eq!(*second.0.lock(), ["progress 2"]);
        assert!(relays.calls.lock().is_empty());
    }
}
