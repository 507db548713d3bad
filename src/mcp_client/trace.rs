//! Calls to other MCP servers in the trace (docs/telemetry.md): a client span per
//! `tools/call` (`tools/call {tool}`, kind client, `mcp.method.name`, `gen_ai.tool.name`,
//! `server.address` as the configured server's name), and its W3C trace context in the
//! request's `_meta` (`traceparent`, `tracestate`: SEP-414), so the server's own spans
//! join the same trace — a toolhost serving the call parents its request span from it.

use opentelemetry::propagation::Injector;
use rmcp::model::{CallToolRequestParams, RequestParamsMeta};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The client span of a call of `tool` on the server `server`; disabled (free) unless
/// traces are exported.
pub(super) fn client_span(server: &str, tool: &str) -> Span {
    tracing::info_span!(
        target: crate::telemetry::SPAN_TARGET,
        "mcp_client_call",
        otel.name = %format_args!("tools/call {tool}"),
        otel.kind = "client",
        mcp.method.name = "tools/call",
        gen_ai.tool.name = tool,
        gen_ai.operation.name = crate::telemetry::EXECUTE_TOOL,
        toolhost.mcp_server = server,
        error.type = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    )
}

/// Puts `span`'s trace context into `request`'s `_meta` (nothing when the span is not
/// recorded).
pub(super) fn inject(span: &Span, request: &mut CallToolRequestParams) {
    if span.is_disabled() {
        return;
    }
    let cx = span.context();
    let mut carrier = MetaCarrier(request);
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&cx, &mut carrier);
    });
}

/// Marks `span` failed with `error_type`.
pub(super) fn failed(span: &Span, error_type: &str) {
    span.record("error.type", error_type);
    span.record("otel.status_code", "error");
}

/// The request's `_meta` as the propagator's carrier: only the keys SEP-414 reserves.
struct MetaCarrier<'a>(&'a mut CallToolRequestParams);

impl Injector for MetaCarrier<'_> {
    fn set(&mut self, key: &str, value: String) {
        match key {
            "traceparent" => self.0.set_traceparent(&value),
            "tracestate" => self.0.set_tracestate(&value),
            _ => {}
        }
    }
}
