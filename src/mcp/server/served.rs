//! One `tools/call` as the operator sees it: the gate, then the pipeline, inside the
//! request's server span ([`trace`](super::trace)); its audit line written before the
//! answer leaves ([`audit`](super::audit)).

use super::{Call, McpServer, Sink, gate, trace};
use rmcp::model::CallToolResponse;
use serde_json::Value;
use std::time::Instant;
use tracing::Instrument;

/// What the pipeline made of a call that reached it.
#[derive(Default)]
pub(crate) struct Reached {
    /// The hooks' and the approval's decisions (when audited).
    pub(crate) decisions: (Option<&'static str>, Option<&'static str>),
    /// The result's error type, if it is an error.
    pub(crate) error_type: Option<&'static str>,
}

impl McpServer {
    /// Runs `call` through the whole pipeline once the gate admits it (see
    /// [`run_admitted`](Self::run_admitted)); `Err` is also the gate's refusal.
    pub(crate) async fn run_call(
        &self,
        mut call: Call,
        sink: Sink,
        cancelled: impl std::future::Future<Output = ()>,
    ) -> Result<CallToolResponse, gate::Refused> {
        let started = Instant::now();
        let trace = trace::RequestTrace::start(
            &call.name,
            &call.tool_call_id,
            call.peer.protocol.as_str(),
            &call.origin,
            self.shared.record_arguments,
        );
        let span = trace.span().clone();
        let name = call.name.clone();
        // Kept for the audit line only (the call itself goes into the pipeline).
        let audited = self.shared.audit.as_ref().map(|log| {
            (
                log,
                call.tool_call_id.clone(),
                call.origin.clone(),
                call.caller.clone(),
            )
        });
        let mut args = call.arguments.take().map(Value::Object).unwrap_or_default();
        trace.arguments(&args);
        let mut reached = None;
        let answer = async {
            let _admitted = self.shared.gate.admit(&self.session.slots).await?;
            let reached = reached.insert(Reached::default());
            self.run_admitted(call, sink, cancelled, &mut args, reached)
                .await
        }
        .instrument(span)
        .await;
        let (outcome, error_type) = match (&answer, &reached) {
            (Ok(CallToolResponse::InputRequired(_)), _) => ("input_required", None),
            (Ok(_), Some(reached)) => match reached.error_type {
                Some(kind) => ("error", Some(kind)),
                None => ("ok", None),
            },
            (Ok(_), None) => ("ok", None),
            (Err(refused), _) => ("refused", Some(trace::refusal_type(refused))),
        };
        // Written before the answer leaves (the caller sends it).
        if let (Some((log, request_id, origin, caller)), Some(reached)) = (&audited, &reached) {
            log.write(&super::audit::Entry {
                request_id,
                parent: None,
                task_id: None,
                origin,
                caller,
                tool: &name,
                args: &args,
                decisions: reached.decisions,
                outcome,
                error_type,
                duration_ms: super::audit::millis(started.elapsed()),
            });
        }
        trace.end(&name, outcome, error_type, answer.as_ref().ok());
        answer
    }
}
