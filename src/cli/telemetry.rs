//! The binary's observability plumbing (docs/telemetry.md): the OpenTelemetry exporter
//! behind the `tracing` spans the library makes (OTLP over HTTP, protobuf), and the
//! Prometheus recorder behind its metrics, with the `/metrics` text they render.
//!
//! Traces are on only when an endpoint is configured (`[telemetry] otlp_endpoint`, or
//! `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`); otherwise no layer
//! is installed and every span is a disabled callsite.

use super::error::CliError;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::sync::OnceLock;
use std::time::Duration;

/// The exporting provider, flushed and shut down at the end of `serve`.
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// The default `service.name`.
const DEFAULT_SERVICE_NAME: &str = "toolhost";

/// Buckets (seconds) of the duration histograms: 100 µs to 30 s.
const BUCKETS: &[f64] = &[
    0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
    30.0,
];

/// The trace exporter's `tracing` layer for `serve`, when `config` asks for traces.
/// `Err`: an endpoint that is not a URL.
pub(super) fn trace_layer<S>(
    config: &TelemetrySettings,
) -> Result<Option<impl tracing_subscriber::Layer<S> + use<S>>, String>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    let Some(endpoint) = &config.endpoint else {
        return Ok(None);
    };
    // reqwest is built without a crypto provider of its own (an `https://` collector):
    // ring, as for the MCP servers' connections.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_timeout(Duration::from_secs(10));
    if let Endpoint::Configured(url) = endpoint {
        exporter = exporter.with_endpoint(url.clone());
    }
    let exporter = exporter
        .build()
        .map_err(|e| format!("[telemetry] otlp_endpoint: {e}"))?;
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            Resource::builder()
                .with_service_name(config.service_name.clone())
                .build(),
        )
        .build();
    let tracer = provider.tracer("toolhost");
    let _ = PROVIDER.set(provider);
    // Requests' `traceparent` is read, and calls to other MCP servers carry it on, in the
    // W3C format.
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let targets = tracing_subscriber::filter::Targets::new()
        .with_target(crate::telemetry::SPAN_TARGET, tracing::Level::TRACE);
    Ok(Some(tracing_subscriber::Layer::with_filter(
        // Per span, only the attributes toolhost sets: no source location, thread or
        // busy/idle timing (each costs allocations on every span of every call).
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_tracked_inactivity(false)
            .with_location(false)
            .with_threads(false)
            .with_level(false)
            .with_target(false),
        targets,
    )))
}

/// Where traces go.
#[derive(Debug, Clone)]
pub(super) enum Endpoint {
    /// `[telemetry] otlp_endpoint` (the `/v1/traces` URL).
    Configured(String),
    /// The standard `OTEL_EXPORTER_OTLP_*` variables (the exporter reads them).
    FromEnvironment,
}

/// `[telemetry]` and the standard variables, resolved.
#[derive(Debug, Clone)]
pub(super) struct TelemetrySettings {
    /// Where traces go (`None`: no traces).
    pub(super) endpoint: Option<Endpoint>,
    /// `service.name`.
    pub(super) service_name: String,
}

impl TelemetrySettings {
    /// The settings from `[telemetry]`'s endpoint and service name and the variables
    /// `env` reads.
    pub(super) fn resolve(
        otlp_endpoint: Option<&str>,
        service_name: Option<&str>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Self {
        let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let endpoint = match otlp_endpoint.map(str::trim).filter(|e| !e.is_empty()) {
            Some(base) => Some(Endpoint::Configured(traces_url(base))),
            None if set("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
                || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some() =>
            {
                Some(Endpoint::FromEnvironment)
            }
            None => None,
        };
        let service_name = service_name
            .map(str::to_string)
            .or_else(|| set("OTEL_SERVICE_NAME"))
            .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_string());
        Self {
            endpoint,
            service_name,
        }
    }
}

/// `base` + `/v1/traces`, as the OTLP spec builds it from `OTEL_EXPORTER_OTLP_ENDPOINT`
/// (a URL already ending in `/v1/traces` is kept).
fn traces_url(base: &str) -> String {
    let base = base.trim_end_matches('/');
    match base.ends_with("/v1/traces") {
        true => base.to_string(),
        false => format!("{base}/v1/traces"),
    }
}

/// Exports the spans still buffered and stops the exporter (bounded: an unreachable
/// collector does not hold the exit up for long).
pub(super) fn flush() {
    if let Some(provider) = PROVIDER.get()
        && let Err(e) = provider.shutdown_with_timeout(Duration::from_secs(5))
    {
        tracing::warn!("cannot flush the trace exporter: {e}");
    }
}

/// Installs the Prometheus recorder (once per process) and returns what renders its text;
/// the caller keeps the upkeep going inside its runtime ([`upkeep`]).
pub(super) fn install_metrics() -> Result<metrics_exporter_prometheus::PrometheusHandle, CliError> {
    static HANDLE: OnceLock<metrics_exporter_prometheus::PrometheusHandle> = OnceLock::new();
    if let Some(handle) = HANDLE.get() {
        return Ok(handle.clone());
    }
    let handle = metrics_exporter_prometheus::PrometheusBuilder::new()
        .with_recommended_naming(true)
        .set_buckets(BUCKETS)
        .and_then(metrics_exporter_prometheus::PrometheusBuilder::install_recorder)
        .map_err(|e| CliError::Usage(format!("cannot install the metrics recorder: {e}")))?;
    crate::telemetry::metric::describe();
    Ok(HANDLE.get_or_init(|| handle).clone())
}

/// Keeps the recorder's histograms trimmed (its upkeep), every 5 s, inside the runtime.
pub(super) async fn upkeep(handle: metrics_exporter_prometheus::PrometheusHandle) {
    let mut every = tokio::time::interval(Duration::from_secs(5));
    loop {
        every.tick().await;
        handle.run_upkeep();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_endpoints_get_the_traces_path() {
        let none = |_: &str| None;
        let settings = TelemetrySettings::resolve(Some("http://c:4318/"), None, none);
        assert!(
            matches!(settings.endpoint, Some(Endpoint::Configured(url)) if url == "http://c:4318/v1/traces")
        );
        assert_eq!(settings.service_name, "toolhost");
    }

    #[test]
    fn the_standard_variables_turn_traces_on() {
        let env = |name: &str| match name {
            "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("http://c:4318".to_string()),
            "OTEL_SERVICE_NAME" => Some("gateway".to_string()),
            _ => None,
        };
        let settings = TelemetrySettings::resolve(None, None, env);
        assert!(matches!(settings.endpoint, Some(Endpoint::FromEnvironment)));
        assert_eq!(settings.service_name, "gateway");
        let configured = TelemetrySettings::resolve(None, Some("mine"), env);
        assert_eq!(configured.service_name, "mine");
    }

    #[test]
    fn no_endpoint_means_no_traces() {
        let settings = TelemetrySettings::resolve(Some("  "), None, |_| None);
        assert!(settings.endpoint.is_none());
    }
}
