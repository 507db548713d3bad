//! Observability's shared names (docs/telemetry.md): the `tracing` target of the spans
//! that become OpenTelemetry spans, and the metric names, so that each span and metric is
//! made in one place (the MCP request boundary, the pipeline's stage boundaries, the store
//! and VM-pool boundaries) and named once.
//!
//! Spans are `tracing` spans with the target [`SPAN_TARGET`]: with no OpenTelemetry layer
//! installed (the default) they are disabled callsites, so a call pays one interest check
//! per span and nothing else. Metrics go through the `metrics` facade, a no-op until a
//! recorder is installed (`toolhost serve` installs the Prometheus one).

pub(crate) mod metric;

/// The `tracing` target of every span meant for OpenTelemetry (the exporter's layer
/// selects exactly this target).
pub(crate) const SPAN_TARGET: &str = "toolhost::span";

/// `gen_ai.operation.name` of a tool call (OpenTelemetry's GenAI conventions).
pub(crate) const EXECUTE_TOOL: &str = "execute_tool";
/// The `tracing` name of the server span of an MCP `tools/call` (`tools/call {tool}` for
/// OpenTelemetry). That span is the call's execution span too: the pipeline opens no
/// `execute_tool` span of its own under it (see [`in_tool_request`]).
pub(crate) const TOOL_REQUEST_SPAN: &str = "mcp_tool_request";

/// Whether the current span is an MCP `tools/call`'s server span. It carries what
/// OpenTelemetry's MCP conventions give a tool's execution (`gen_ai.operation.name =
/// execute_tool`, the tool's name, `error.type`), so a call it runs needs no second span:
/// the pipeline's `execute_tool` span under it was a third of what tracing cost per call.
/// `false` when traces are off (the current span is then disabled).
pub(crate) fn in_tool_request() -> bool {
    tracing::Span::current()
        .metadata()
        .is_some_and(|meta| meta.name() == TOOL_REQUEST_SPAN)
}

/// The longest tool name put on a span whole: a client may call any name, and a
/// megabyte-long one must not become a megabyte of every span it names.
const MAX_NAME_ON_SPAN: usize = 128;

/// `name`, cut to at most [`MAX_NAME_ON_SPAN`] bytes (at a character boundary) for spans.
pub(crate) fn span_name(name: &str) -> &str {
    if name.len() <= MAX_NAME_ON_SPAN {
        return name;
    }
    let mut end = MAX_NAME_ON_SPAN;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_are_cut_for_spans_at_a_character_boundary() {
        assert_eq!(span_name("echo"), "echo");
        let long = "é".repeat(100);
        let cut = span_name(&long);
        assert!(cut.len() <= MAX_NAME_ON_SPAN && long.starts_with(cut));
        assert_eq!(cut.chars().count(), 64);
    }
}
