//! What a server sends about one of our calls while it runs, relayed to the caller: its
//! progress and log notifications go to the call's observer (`ctx.observer`), which for a
//! call from our own MCP client turns them into that client's `notifications/progress`
//! (with the client's own progress token) and `notifications/message`; its elicitation
//! requests go to the call's [`Asker`], as `ctx.ask`'s do: the MCP client behind the call
//! is asked on either revision (a server→client request on a 2025-11-25 session; on
//! 2026-07-28 an input request of the call's round: the external call is made again in the
//! next round and its question answered from the recorded answer, keyed
//! `mcp.SERVER.N` after the call's key prefix, N the question's place in the call).
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

use crate::registry::{
    Asker, CallObserver, Capability, InputAnswer, InputKind, InputRequest, LogLevel, LogLine,
    Progress, ask_round_guarded, supports_guarded,
};
use parking_lot::Mutex;
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio_util::sync::CancellationToken;

/// Who is behind one of our calls: where its reports go and who answers its questions.
#[derive(Clone, Default)]
pub(crate) struct Caller {
    /// The calling context's observer.
    pub(crate) observer: Option<Arc<dyn CallObserver>>,
    /// The calling context's asker.
    pub(crate) asker: Option<Arc<dyn Asker>>,
    /// The calling context's prefix of input-request keys (`ctx.call` nesting).
    pub(crate) ask_prefix: String,
    /// The calling context's cancellation: a question waits no longer than the call.
    pub(crate) cancel: CancellationToken,
}

/// One call running on the server, and the tool's name (as registered) for its log lines.
struct Relayed {
    caller: Caller,
    tool: String,
    /// Questions the server asked during this call so far (they key the next one).
    questions: u32,
}

/// The calls of one server running now, by progress token.
#[derive(Default)]
pub(crate) struct Relays {
    calls: Mutex<HashMap<ProgressToken, Relayed>>,
    /// Numbers the provisional tokens of calls not sent yet ([`Relays::register_unsent`]).
    unsent: AtomicU64,
}

/// A call's place in [`Relays`]; dropping it ends the relay.
pub(crate) struct Registration {
    relays: Arc<Relays>,
    token: ProgressToken,
}

impl Registration {
    /// Moves the call to the token its sent request carries: its progress is matched by it
    /// from now on.
    pub(crate) fn sent_as(&mut self, token: ProgressToken) {
        let mut calls = self.relays.calls.lock();
        if let Some(relayed) = calls.remove(&self.token) {
            calls.insert(token.clone(), relayed);
        }
        self.token = token;
    }
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
            questions: 0,
        };
        self.calls.lock().insert(token.clone(), relayed);
        Registration {
            relays: self.clone(),
            token,
        }
    }

    /// Notes a call of `tool` by `caller` before its request is sent (under a provisional
    /// token; [`Registration::sent_as`] gives it the request's once sent). A server may ask
    /// its question or log its line as soon as the request reaches it, which can be before
    /// the task that sent it runs again: noted only after sending, such a call was not yet
    /// running for the relay, and its question was answered `cancel`.
    pub(crate) fn register_unsent(self: &Arc<Self>, caller: Caller, tool: &str) -> Registration {
        let number = self.unsent.fetch_add(1, Ordering::Relaxed);
        let provisional = ProgressToken(rmcp::model::NumberOrString::String(
            format!("toolhost-unsent-{number}").into(),
        ));
        self.register(provisional, caller, tool)
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

    /// The caller of the one call running, if exactly one is, and the place of a question
    /// it is asked now (1 for its first).
    fn lone_question(&self) -> Option<(Caller, u32)> {
        let mut calls = self.calls.lock();
        if calls.len() != 1 {
            return None;
        }
        let only = calls.values_mut().next()?;
        only.questions += 1;
        Some((only.caller.clone(), only.questions))
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

    /// An elicitation request from server `server`: asked through the asker of the one
    /// call running, if there is exactly one and its client can be asked; otherwise (and
    /// when the client cannot answer, or the call ends first) `cancel`: nobody was asked.
    pub(crate) async fn elicit(&self, server: &str, params: ElicitRequestParams) -> ElicitResult {
        let cancel = || ElicitResult::new(ElicitationAction::Cancel);
        let Some((caller, place)) = self.lone_question() else {
            tracing::debug!(target: "toolhost::mcp_client", server, "elicitation not relayed (no single call running)");
            return cancel();
        };
        let Some(asker) = caller.asker else {
            tracing::debug!(target: "toolhost::mcp_client", server, "elicitation not relayed (the call has nobody to ask)");
            return cancel();
        };
        if !supports_guarded(&*asker, Capability::Elicitation) {
            return cancel();
        }
        let Some(kind) = form(params) else {
            tracing::debug!(target: "toolhost::mcp_client", server, "elicitation not relayed (only form questions are)");
            return cancel();
        };
        let key = format!("{}mcp.{server}.{place}", caller.ask_prefix);
        let request = InputRequest::new(key, kind);
        let answer = tokio::select! {
            mut answers = ask_round_guarded(&*asker, vec![request]) => answers.pop(),
            // The call ended (or stopped for a 2026-07-28 round): the server's call goes too.
            () = caller.cancel.cancelled() => None,
        };
        match answer {
            Some(InputAnswer::Accept { content }) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
            }
            Some(InputAnswer::Decline) => ElicitResult::new(ElicitationAction::Decline),
            _ => cancel(),
        }
    }
}

/// A form question as the request a tool's `ctx.ask` makes (`None` for another mode).
fn form(params: ElicitRequestParams) -> Option<InputKind> {
    match params {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => Some(InputKind::Elicitation {
            message,
            schema: serde_json::to_value(requested_schema).ok()?,
        }),
        _ => None,
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
            ..Caller::default()
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

    /// Answers every question `accept`, noting the keys it was asked.
    #[derive(Default)]
    struct Accepts(Mutex<Vec<String>>);

    impl Asker for Accepts {
        fn ask(&self, request: InputRequest) -> crate::registry::AskFuture<'_> {
            self.0.lock().push(request.key);
            let mut content = serde_json::Map::new();
            content.insert("p".into(), "x".into());
            Box::pin(async move { InputAnswer::Accept { content } })
        }
    }

    /// A question is asked only through the asker of the one call running: with nobody
    /// behind it, or with two calls in flight, it is answered `cancel` and nobody is asked.
    /// Its key names the server and the question's place in the call, after the call's
    /// prefix, so a replayed call asks the same keys.
    #[test]
    fn a_question_goes_only_to_the_lone_calls_asker_under_a_stable_key() {
        let runtime = runtime();
        let relays = Arc::new(Relays::default());
        let asker = Arc::new(Accepts::default());
        let behind = Caller {
            asker: Some(asker.clone()),
            ask_prefix: "c2.".into(),
            ..Caller::default()
        };
        let action = |relays: &Relays| runtime.block_on(relays.elicit("s", question())).action;
        assert_eq!(action(&relays), ElicitationAction::Cancel); // no call running
        let cli = relays.register(token(1), Caller::default(), "mcp__s__a");
        assert_eq!(action(&relays), ElicitationAction::Cancel); // nobody behind it
        let mcp_call = relays.register(token(2), behind.clone(), "mcp__s__a");
        assert_eq!(action(&relays), ElicitationAction::Cancel); // two in flight
        drop(cli);
        assert_eq!(action(&relays), ElicitationAction::Accept);
        assert_eq!(action(&relays), ElicitationAction::Accept);
        drop(mcp_call);
        let _again = relays.register(token(3), behind, "mcp__s__a");
        assert_eq!(action(&relays), ElicitationAction::Accept);
        // Places count per call, from 1 (the attempt with two in flight counted for none).
        assert_eq!(*asker.0.lock(), ["c2.mcp.s.1", "c2.mcp.s.2", "c2.mcp.s.1"]);
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
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

    /// A server may ask as soon as the request reaches it: a call is noted before its
    /// request is sent, so such a question reaches the call's asker.
    #[test]
    fn a_question_before_the_call_is_sent_reaches_its_asker() {
        let runtime = runtime();
        let relays = Arc::new(Relays::default());
        let asker = Arc::new(Accepts::default());
        let behind = Caller {
            asker: Some(asker.clone()),
            ..Caller::default()
        };
        let _unsent = relays.register_unsent(behind, "mcp__s__a");
        let answer = runtime.block_on(relays.elicit("s", question()));
        assert_eq!(answer.action, ElicitationAction::Accept);
    }

    /// Once sent, the call's progress is matched by its request's token, and ending the
    /// call removes it under that token.
    #[test]
    fn a_sent_call_takes_its_requests_token() {
        let relays = Arc::new(Relays::default());
        let heard = Arc::new(Heard::default());
        let mut call = relays.register_unsent(observed(heard.clone()), "mcp__s__a");
        call.sent_as(token(7));
        relays.progress(ProgressNotificationParam::new(token(7), 1.0));
        assert_eq!(*heard.0.lock(), ["progress 1"]);
        drop(call);
        assert!(relays.calls.lock().is_empty());
    }
}
