//! A server's progress and log notifications during one of our calls, relayed to the call
//! that made it: its observer (`ctx.observer`), which for a call from our own MCP client
//! turns them into that client's `notifications/progress` (with the client's own progress
//! token) and `notifications/message`.
//!
//! Progress is matched exactly: each request carries a progress token of its own (rmcp
//! mints one per request), and a report with the token of an observed call goes to that
//! call only. Log lines
//! carry no request in the session protocol, so one is relayed only while exactly one
//! relayed call of the server runs (it can then only be that call's); with several in
//! flight a line cannot be told apart and is left in the server's own log (at debug), never
//! handed to a caller it may not belong to.

// Logging is deprecated by SEP-2577 from protocol 2026-07-28 on; servers of today still send it.
#![allow(deprecated)]

use crate::registry::{CallObserver, LogLevel, LogLine, Progress};
use parking_lot::Mutex;
use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// One relayed call: where its reports go, and the tool's name (as registered) for its log
/// lines.
struct Relayed {
    observer: Arc<dyn CallObserver>,
    tool: String,
}

/// The calls of one server whose notifications are relayed, by progress token.
#[derive(Default)]
pub(crate) struct Relays {
    calls: Mutex<HashMap<ProgressToken, Relayed>>,
}

/// A call's place in [`Relays`]; dropping it ends the relay.
pub(crate) struct Registration {
    relays: Arc<Relays>,
    token: ProgressToken,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.relays.calls.lock().remove(&self.token);
    }
}

impl Relays {
    /// Relays the notifications of the call of `tool` whose request carries `token` to
    /// `observer`, until the returned registration is dropped.
    pub(crate) fn register(
        self: &Arc<Self>,
        token: ProgressToken,
        observer: Arc<dyn CallObserver>,
        tool: &str,
    ) -> Registration {
        let relayed = Relayed {
            observer,
            tool: tool.to_string(),
        };
        self.calls.lock().insert(token.clone(), relayed);
        Registration {
            relays: self.clone(),
            token,
        }
    }

    /// A progress notification from the server: to the call whose token it carries.
    pub(crate) fn progress(&self, params: ProgressNotificationParam) {
        let observer = match self.calls.lock().get(&params.progress_token) {
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

    fn token(n: i64) -> ProgressToken {
        ProgressToken(rmcp::model::NumberOrString::Number(n))
    }

    #[test]
    fn progress_goes_by_token_and_logs_only_to_a_lone_call() {
        let relays = Arc::new(Relays::default());
        let first = Arc::new(Heard::default());
        let second = Arc::new(Heard::default());
        let one = relays.register(token(1), first.clone(), "mcp__s__a");
        relays.log(
            "s",
            LoggingMessageNotificationParam::new(LoggingLevel::Info, "alone".into()),
        );
        let two = relays.register(token(2), second.clone(), "mcp__s__b");
        relays.progress(ProgressNotificationParam::new(token(2), 2.0));
        relays.log(
            "s",
            LoggingMessageNotificationParam::new(LoggingLevel::Info, "both".into()),
        );
        // A token no call of ours carries reaches nobody.
        relays.progress(ProgressNotificationParam::new(token(9), 9.0));
        drop(two);
        relays.progress(ProgressNotificationParam::new(token(1), 1.0));
        // After its call ended, a report with its token reaches nobody either.
        relays.progress(ProgressNotificationParam::new(token(2), 3.0));
        drop(one);
        assert_eq!(*first.0.lock(), ["log alone", "progress 1"]);
        assert_eq!(*second.0.lock(), ["progress 2"]);
        assert!(relays.calls.lock().is_empty());
    }
}
