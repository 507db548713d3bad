//! What a server sends about one of our calls while it runs, relayed to the caller: its
//! progress and log notifications go to the call's observer (`ctx.observer`), which for a
//! call from our own MCP client turns them into that client's `notifications/progress`
//! (with the client's own progress token) and `notifications/message`; its elicitation
//! requests go to the call's elicitation relay, which asks that client.
//!
//! Progress is matched exactly: each request carries a progress token of its own (rmcp
//! mints one per request), and a report with the token of a call goes to that call only.
//! Log lines and elicitation requests carry no request in the session protocol, so one is
//! relayed only while exactly one call of the server runs (it can then only be that
//! call's): with several in flight it cannot be told apart, so a log line stays in the
//! server's own log (at debug) and a question is answered `cancel`, never handed to a
//! caller it may not belong to.

// Logging is deprecated by SEP-2577 from protocol 2026-07-28 on; servers of today still send it.
#![allow(deprecated)]

use crate::registry::{CallObserver, ElicitationRelay, LogLevel, LogLine, Progress};
use parking_lot::Mutex;
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Who is behind one of our calls: where its reports go and who answers its questions.
#[derive(Clone, Default)]
pub(crate) struct Caller {
    /// The calling context's observer.
    pub(crate) observer: Option<Arc<dyn CallObserver>>,
    /// The calling context's elicitation relay.
    pub(crate) elicitation: Option<ElicitationRelay>,
}

/// One call running on the server, and the tool's name (as registered) for its log lines.
struct Relayed {
    caller: Caller,
    tool: String,
}

/// The calls of one server running now, by progress token.
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
    /// Notes the call of `tool` whose request carries `token`, made by `caller`, until the
    /// returned registration is dropped. Every call is noted, also one with nobody to
    /// relay to: a line or question is relayed only when it can be no other call's.
    pub(crate) fn register(
        self: &Arc<Self>,
        token: ProgressToken,
        caller: Caller,
        tool: &str,
    ) -> Registration {
        let relayed = Relayed {
            caller,
            tool: tool.to_string(),
        };
        self.calls.lock().insert(token.clone(), relayed);
        Registration {
            relays: self.clone(),
            token,
        }
    }

    /// The caller of the one call running, if exactly one is.
    fn lone(&self) -> Option<(Caller, String)> {
        let calls = self.calls.lock();
        let mut running = calls.values();
        match (running.next(), running.next()) {
            (Some(only), None) => Some((only.caller.clone(), only.tool.clone())),
            _ => None,
        }
    }

    /// A progress notification from the server: to the call whose token it carries.
    pub(crate) fn progress(&self, params: ProgressNotificationParam) {
        let observer = match self.calls.lock().get(&params.progress_token) {
            Some(relayed) => relayed.caller.observer.clone(),
            None => return, // a call that has ended, or a token we never sent
        };
        if let Some(observer) = observer {
            observer.progress(Progress::new(params.progress, params.total, params.message));
        }
    }

    /// A log notification from server `server`: to the one call running, if there is
    /// exactly one.
    pub(crate) fn log(&self, server: &str, params: LoggingMessageNotificationParam) {
        let message = match params.data {
            Value::String(text) => text,
            other => other.to_string(),
        };
        let Some((
            Caller {
                observer: Some(observer),
                ..
            },
            tool,
        )) = self.lone()
        else {
            tracing::debug!(target: "toolhost::mcp_client", server, "log line not relayed (no single observed call running): {message}");
            return;
        };
        observer.log(LogLine {
            level: level(params.level),
            tool,
            at: params.logger.unwrap_or_else(|| format!("mcp:{server}")),
            message,
        });
    }

    /// An elicitation request from server `server`: asked of the client behind the one
    /// call running, if there is exactly one and it has a client to ask; otherwise (and
    /// when the client cannot answer) `cancel`: nobody was asked.
    pub(crate) async fn elicit(&self, server: &str, params: ElicitRequestParams) -> ElicitResult {
        let relay = match self.lone() {
            Some((
                Caller {
                    elicitation: Some(relay),
                    ..
                },
                _,
            )) => relay,
            _ => {
                tracing::debug!(target: "toolhost::mcp_client", server, "elicitation not relayed (no single call with a client to ask)");
                return ElicitResult::new(ElicitationAction::Cancel);
            }
        };
        let Ok(params) = serde_json::to_value(params) else {
            return ElicitResult::new(ElicitationAction::Cancel);
        };
        relay(params)
            .await
            .and_then(|answer| serde_json::from_value(answer).ok())
            .unwrap_or_else(|| ElicitResult::new(ElicitationAction::Cancel))
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

    fn observed(observer: Arc<Heard>) -> Caller {
        Caller {
            observer: Some(observer),
            elicitation: None,
        }
    }

    /// A call with nobody behind it still counts: a log line could be its.
    #[test]
    fn a_log_line_is_not_relayed_while_an_unobserved_call_runs() {
        let relays = Arc::new(Relays::default());
        let heard = Arc::new(Heard::default());
        let _observed = relays.register(token(1), observed(heard.clone()), "mcp__s__a");
        let _cli = relays.register(token(2), Caller::default(), "mcp__s__a");
        relays.log(
            "s",
            LoggingMessageNotificationParam::new(LoggingLevel::Info, "whose?".into()),
        );
        assert!(heard.0.lock().is_empty());
    }

    fn question() -> ElicitRequestParams {
        serde_json::from_value(serde_json::json!({
            "message": "Password?",
            "requestedSchema": {"type": "object", "properties": {"p": {"type": "string"}}}
        }))
        .expect("elicitation params")
    }

    /// A question is asked only of the client behind the one call running: with nobody
    /// behind it, or with two calls in flight, it is answered `cancel` and nobody is asked.
    #[test]
    fn a_question_goes_only_to_the_lone_calls_client() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let relays = Arc::new(Relays::default());
        let asked = Arc::new(Mutex::new(0));
        let counter = asked.clone();
        let relay: ElicitationRelay = Arc::new(move |_params| {
            *counter.lock() += 1;
            Box::pin(async { Some(serde_json::json!({"action": "accept", "content": {"p": "x"}})) })
        });
        let behind = Caller {
            observer: None,
            elicitation: Some(relay),
        };
        let action = |relays: &Relays| runtime.block_on(relays.elicit("s", question())).action;
        assert_eq!(action(&relays), ElicitationAction::Cancel); // no call running
        let cli = relays.register(token(1), Caller::default(), "mcp__s__a");
        assert_eq!(action(&relays), ElicitationAction::Cancel); // nobody behind it
        let _mcp_call = relays.register(token(2), behind.clone(), "mcp__s__a");
        assert_eq!(action(&relays), ElicitationAction::Cancel); // two in flight
        drop(cli);
        assert_eq!(action(&relays), ElicitationAction::Accept);
        assert_eq!(*asked.lock(), 1);
    }

    fn token(n: i64) -> ProgressToken {
        ProgressToken(rmcp::model::NumberOrString::Number(n))
    }

    #[test]
    fn progress_goes_by_token_and_logs_only_to_a_lone_call() {
        let relays = Arc::new(Relays::default());
        let first = Arc::new(Heard::default());
        let second = Arc::new(Heard::default());
        let one = relays.register(token(1), observed(first.clone()), "mcp__s__a");
        relays.log(
            "s",
            LoggingMessageNotificationParam::new(LoggingLevel::Info, "alone".into()),
        );
        let two = relays.register(token(2), observed(second.clone()), "mcp__s__b");
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
