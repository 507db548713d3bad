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
