//! The MCP request boundary's telemetry (docs/telemetry.md), in one place: the server span
//! of each `tools/call` (OpenTelemetry's MCP conventions: `tools/call {tool}`, kind server,
//! `mcp.method.name`, `mcp.protocol.version`, `gen_ai.tool.name`, `gen_ai.operation.name`,
//! `jsonrpc.request.id`, `network.transport`, `mcp.session.id`, `error.type`), parented
//! from the trace context the request carried, and the `mcp.server.operation.duration`
//! histogram.

use super::gate::Refused;
use super::origin::Origin;
use crate::telemetry::{EXECUTE_TOOL, SPAN_TARGET, TOOL_REQUEST_SPAN, metric};
use rmcp::model::CallToolResponse;
use std::collections::HashMap;
use std::time::Instant;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The `mcp.method.name` of a tool call.
const TOOLS_CALL: &str = "tools/call";
/// The `mcp.method.name` of a listing.
const TOOLS_LIST: &str = "tools/list";

/// One `tools/call` being served: its span and when it started.
pub(crate) struct RequestTrace {
    span: Span,
    started: Instant,
    record_arguments: bool,
}

impl RequestTrace {
    /// Opens the server span of a call of `tool` (request id `request_id`, protocol
    /// `protocol`) from `origin`; `record_arguments` (`[telemetry] record_arguments`) puts
    /// the arguments and the result on it.
    pub(crate) fn start(
        tool: &str,
        request_id: &str,
        protocol: &str,
        origin: &Origin,
        record_arguments: bool,
    ) -> Self {
        let tool = crate::telemetry::span_name(tool);
        let span = tracing::info_span!(
            target: SPAN_TARGET,
            TOOL_REQUEST_SPAN,
            otel.name = %format_args!("{TOOLS_CALL} {tool}"),
            otel.kind = "server",
            mcp.method.name = TOOLS_CALL,
            mcp.protocol.version = protocol,
            gen_ai.tool.name = tool,
            gen_ai.operation.name = EXECUTE_TOOL,
            jsonrpc.request.id = request_id,
            network.transport = origin.network_transport(),
            error.type = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        adopt(&span, origin);
        Self {
            span,
            started: Instant::now(),
            record_arguments,
        }
    }

    /// The span, to run the call in.
    pub(crate) fn span(&self) -> &Span {
        &self.span
    }

    /// Puts the call's arguments on the span (only with `record_arguments`).
    pub(crate) fn arguments(&self, args: &serde_json::Value) {
        if self.record_arguments && !self.span.is_disabled() {
            self.span
                .set_attribute("gen_ai.tool.call.arguments", args.to_string());
        }
    }

    /// Ends the call of `tool`: `outcome` (`ok`, `error`, `input_required`, `refused`), the
    /// error type if any, the answer (put on the span only with `record_arguments`).
    pub(crate) fn end(
        self,
        tool: &str,
        outcome: &'static str,
        error_type: Option<&str>,
        answer: Option<&CallToolResponse>,
    ) {
        if let Some(kind) = error_type {
            self.span.record("error.type", kind);
            self.span.record("otel.status_code", "error");
        }
        if let Some(CallToolResponse::Complete(result)) = answer.filter(|_| self.record_arguments)
            && !self.span.is_disabled()
        {
            let text = serde_json::to_string(result).unwrap_or_default();
            self.span.set_attribute("gen_ai.tool.call.result", text);
        }
        if metric::enabled() {
            let seconds = self.started.elapsed().as_secs_f64();
            metric::operation(TOOLS_CALL, tool, outcome, error_type, seconds);
        }
    }
}

/// The server span of a `tools/list` request (`request_id`, protocol `protocol`) from
/// `origin`.
pub(crate) fn listing_span(request_id: &str, protocol: &str, origin: &Origin) -> Span {
    let span = tracing::info_span!(
        target: SPAN_TARGET,
        "mcp_request",
        otel.name = TOOLS_LIST,
        otel.kind = "server",
        mcp.method.name = TOOLS_LIST,
        mcp.protocol.version = protocol,
        jsonrpc.request.id = request_id,
        network.transport = origin.network_transport(),
        error.type = tracing::field::Empty,
    );
    adopt(&span, origin);
    span
}

/// Records a `tools/list` that took since `started` (`ok`: it answered a listing).
pub(crate) fn listed(started: Instant, ok: bool) {
    if metric::enabled() {
        let outcome = if ok { "ok" } else { "error" };
        let seconds = started.elapsed().as_secs_f64();
        metric::operation(TOOLS_LIST, "", outcome, None, seconds);
    }
}

/// Gives the request span `span` its session and its parent: the trace context `origin`
/// carried. Costs nothing when the span is not recorded.
fn adopt(span: &Span, origin: &Origin) {
    if span.is_disabled() {
        return;
    }
    if let Some(session) = &origin.session_id {
        span.set_attribute("mcp.session.id", session.clone());
    }
    if let Some(parent) = &origin.traceparent {
        let mut carrier = HashMap::with_capacity(2);
        carrier.insert("traceparent".to_string(), parent.clone());
        if let Some(state) = &origin.tracestate {
            carrier.insert("tracestate".to_string(), state.clone());
        }
        // A malformed value extracts as no parent: the span starts its own trace.
        let cx = opentelemetry::global::get_text_map_propagator(|propagator| {
            propagator.extract(&carrier)
        });
        let _ = span.set_parent(cx);
    }
}

/// The `error.type` of a call the server refused before or around the pipeline.
pub(crate) fn refusal_type(refused: &Refused) -> &'static str {
    match refused {
        Refused::ShuttingDown | Refused::ServerClosing => "shutting_down",
        Refused::Busy { .. } => "busy",
        Refused::SessionClosing => "session_closing",
        Refused::MissingCapability { .. } => "missing_capability",
        Refused::InputState(_) => "invalid_input_state",
        #[allow(unreachable_patterns)]
        _ => "refused",
    }
}
