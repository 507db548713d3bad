//! `[telemetry]` (traces and metrics) and `[audit]` (the audit log): docs/telemetry.md.

use serde::Deserialize;
use std::path::PathBuf;

/// `[telemetry]`: OpenTelemetry traces and the Prometheus metrics endpoint.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) struct TelemetryConfig {
    /// The OTLP/HTTP endpoint traces are exported to (`http://collector:4318`; the
    /// `/v1/traces` path is added). Unset: `OTEL_EXPORTER_OTLP_ENDPOINT`, else no traces.
    pub otlp_endpoint: Option<String>,
    /// The `service.name` of the exported spans (default: `OTEL_SERVICE_NAME`, else
    /// `toolhost`).
    pub service_name: Option<String>,
    /// Record tool arguments and results on spans (default false: they may hold secrets).
    #[serde(default)]
    pub record_arguments: bool,
    /// Serve `GET /metrics` on the HTTP server without the bearer token (default false).
    #[serde(default)]
    pub metrics_public: bool,
}

/// `[audit]`: one JSON line per call that reached the pipeline.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub(crate) struct AuditConfig {
    /// A file (relative to the config file's directory), or `"stderr"`. Unset: no audit log.
    pub path: Option<PathBuf>,
    /// Write the raw arguments too (default false: only their SHA-256).
    #[serde(default)]
    pub arguments: bool,
    /// Rotate the file (`audit.log` → `audit.log.1`) once it would grow past this many
    /// bytes (default: 100 MiB; 0: never).
    pub max_bytes: Option<u64>,
}
