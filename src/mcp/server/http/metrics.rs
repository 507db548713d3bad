//! `GET /metrics`: the Prometheus text of the recorder the binary installed, on the MCP
//! server's HTTP listener (behind the same token as `/mcp` unless `[telemetry]
//! metrics_public`) or on a listener of its own (`serve --metrics ADDR`).

use super::connections;
use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What renders the metrics as Prometheus text.
pub(crate) type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// `GET /metrics` on the HTTP server.
#[derive(Clone)]
pub(crate) struct MetricsRoute {
    /// Renders the text.
    pub(crate) render: Render,
    /// Served without the bearer token (`[telemetry] metrics_public`).
    pub(crate) public: bool,
}

/// A router answering `GET /metrics` with `render`'s text.
pub(crate) fn router(render: Render) -> Router {
    Router::new().route(
        "/metrics",
        get(move || {
            let render = render.clone();
            async move {
                // Rendering walks every metric: off the async workers.
                match tokio::task::spawn_blocking(move || render()).await {
                    Ok(text) => (
                        [(
                            header::CONTENT_TYPE,
                            "text/plain; version=0.0.4; charset=utf-8",
                        )],
                        text,
                    )
                        .into_response(),
                    Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
                }
            }
        }),
    )
}

/// Serves `GET /metrics` on `listener` until `stop` is cancelled (`serve --metrics`).
pub(crate) async fn serve_metrics(
    listener: tokio::net::TcpListener,
    render: Render,
    stop: CancellationToken,
) -> std::io::Result<()> {
    let limits = connections::Limits {
        max_connections: 16,
        header_timeout: Duration::from_secs(10),
    };
    // A scrape now and then: served on the calling runtime.
    let spread = std::sync::Arc::new(connections::Spread::start(1)?);
    connections::serve(listener, router(render), limits, spread, stop).await
}
