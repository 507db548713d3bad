//! How a call made as a task shows to the operator (docs/telemetry.md): its request's
//! server span (`tools/call {tool}`, open from the request until the call ends — the
//! task's end when it became one — with `toolhost.task.id` once the task exists) and its
//! audit line, written when the call ends (before a task's end is recorded, so before
//! `tasks/get` can show its result), with the task's id.

use crate::Caller;
use crate::mcp::server::audit::{self, AuditLog, Entry};
use crate::mcp::server::origin::Origin;
use crate::mcp::server::trace::RequestTrace;
use crate::mcp::server::{Call, McpServer};
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The hooks' and the approval's decisions about a call.
pub(super) type Decisions = (Option<&'static str>, Option<&'static str>);

/// One task call's span and audit line, until the call ends.
pub(super) struct TaskReport {
    trace: RequestTrace,
    audit: Option<Arc<AuditLog>>,
    started: Instant,
    request_id: String,
    origin: Origin,
    caller: Caller,
    tool: String,
    /// The arguments (kept only for the audit line).
    args: Value,
}

impl TaskReport {
    /// Opens the request span of `call` (arguments `args`) on `server`.
    pub(super) fn start(server: &McpServer, call: &Call, args: &Value) -> Self {
        let trace = RequestTrace::start(
            &call.name,
            &call.tool_call_id,
            call.peer.protocol.as_str(),
            &call.origin,
            server.shared.record_arguments,
        );
        trace.arguments(args);
        let audit = server.shared.audit.clone();
        Self {
            trace,
            started: Instant::now(),
            request_id: call.tool_call_id.clone(),
            origin: call.origin.clone(),
            caller: call.caller.clone(),
            tool: call.name.clone(),
            args: if audit.is_some() {
                args.clone()
            } else {
                Value::Null
            },
            audit,
        }
    }

    /// The request span (the call runs in it).
    pub(super) fn span(&self) -> Span {
        self.trace.span().clone()
    }

    /// The call became the task `id`.
    pub(super) fn became(&self, id: &str) {
        let span = self.trace.span();
        if !span.is_disabled() {
            span.set_attribute("toolhost.task.id", id.to_string());
        }
    }

    /// The call ended before reaching the pipeline (`error_type`: the server's refusal).
    pub(super) fn refused(self, error_type: &'static str) {
        self.trace
            .end(&self.tool, "refused", Some(error_type), None);
    }

    /// The call ended after reaching the pipeline, which decided `decisions`: `outcome`
    /// (`ok`, `error`, `input_required`), the error's type, the task it ran as, if any.
    pub(super) fn ended(
        self,
        task_id: Option<&str>,
        decisions: Decisions,
        outcome: &'static str,
        error_type: Option<&str>,
    ) {
        if let Some(log) = &self.audit {
            log.write(&Entry {
                request_id: &self.request_id,
                parent: None,
                task_id,
                origin: &self.origin,
                caller: &self.caller,
                tool: &self.tool,
                args: &self.args,
                decisions,
                outcome,
                error_type,
                duration_ms: audit::millis(self.started.elapsed()),
            });
        }
        self.trace.end(&self.tool, outcome, error_type, None);
    }
}
