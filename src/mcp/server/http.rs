//! `toolhost serve --http ADDR`: MCP's streamable-HTTP transport at `/mcp` (rmcp's tower
//! service under axum), with sessions or `--stateless`, and:
//!
//! - bearer-token auth (`[serve] auth_token_env` / `--auth-token-env`): a request without
//!   the right `Authorization: Bearer …` gets 401 with `WWW-Authenticate: Bearer` and a
//!   JSON-RPC error ([`auth`]); tokens are compared in constant time and never logged. A
//!   non-loopback bind without a token refuses to start;
//! - `Origin` validation against DNS rebinding: besides `http://localhost:*`,
//!   `http://127.0.0.1:*` and `http://[::1]:*`, only `[serve] allowed_origins` (403);
//!   on a loopback bind the `Host` header must be a loopback name too;
//! - a request body limit (`[serve] max_request_bytes`, 413 with a JSON-RPC error carrying
//!   the request's id when its first bytes show it);
//! - `GET /healthz` → `{"status":"ok","tools":N,"generation":G,"store":{"backend":B,"ok":true}}`
//!   (no token needed; `"degraded"` and the store's message when the store cannot serve);
//! - bounds on what clients can hold: connections ([`connections`]: `max_connections`,
//!   `header_timeout_ms`, `TCP_NODELAY`), request bodies ([`body`]) and sessions
//!   ([`sessions`]: `max_sessions`, `session_idle_ms`);
//! - SSE polling on sessions (`[serve] sse_poll_after_ms`, [`polling`]): a long
//!   `tools/call`'s stream is ended with a priming event and resumed by `GET` +
//!   `Last-Event-ID`;
//! - `--stateless`: `notifications/cancelled` stops the call it names ([`stateless_cancel`]);
//!   `logging/setLevel` has no session to apply to and says so;
//! - graceful shutdown: new connections stop, running calls get `[serve] drain_ms`, then
//!   are cancelled (they answer `cancelled`), then sessions close.

mod auth;
mod body;
mod connections;
mod polling;
mod retry_after;
mod sessions;
pub(crate) mod stateless_cancel;

use super::{McpServer, Shared};
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Browser origins always allowed (the machine itself, any port).
const LOCAL_ORIGINS: &[&str] = &["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

/// How [`Host::serve_mcp_http`](crate::Host::serve_mcp_http) serves: with sessions or stateless, with or without a
/// bearer token. The token never appears in `Debug` output or logs.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct HttpOptions {
    /// No sessions: every request stands alone (behind a load balancer).
    pub stateless: bool,
    /// The bearer token clients must send, if any (required on a non-loopback address).
    pub bearer_token: Option<String>,
    /// Where the token came from, for the server's log (e.g. an environment variable's
    /// name; never told to a client).
    pub(crate) token_source: Option<String>,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("stateless", &self.stateless)
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

impl HttpOptions {
    /// Serve without sessions.
    pub fn with_stateless(mut self, stateless: bool) -> Self {
        self.stateless = stateless;
        self
    }

    /// Require `Authorization: Bearer <token>` on `/mcp`.
    pub fn with_bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// Names where the token came from in the server's log of a refusal (`$NAME`).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn with_token_source(mut self, source: impl Into<String>) -> Self {
        self.token_source = Some(source.into());
        self
    }
}

/// `ADDR` of `--http`: `HOST:PORT`, or a bare port (then loopback).
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) fn parse_addr(text: &str) -> Result<SocketAddr, BadAddr> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    let text = text
        .strip_prefix(':')
        .map_or(text.to_string(), |port| format!("127.0.0.1:{port}"));
    use std::net::ToSocketAddrs;
    text.to_socket_addrs()
        .map_err(|source| BadAddr::NotAnAddress {
            text: text.clone(),
            source,
        })?
        .next()
        .ok_or(BadAddr::NoAddress { text })
}

/// Why `--http ADDR` names no address.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BadAddr {
    /// Not `HOST:PORT` or `PORT`, or the host name does not resolve.
    #[error("--http {text}: not an address ({source}); use HOST:PORT or PORT")]
    NotAnAddress {
        /// The address as given (a bare `:PORT` completed with loopback).
        text: String,
        /// The resolver's error.
        source: std::io::Error,
    },
    /// The name resolves, but to no address.
    #[error("--http {text}: the name resolves to no address")]
    NoAddress {
        /// The address as given.
        text: String,
    },
}

/// Refuses a setup that would expose the tools unauthenticated beyond this machine.
pub(crate) fn check_exposure(addr: SocketAddr, options: &HttpOptions) -> crate::Result<()> {
    if addr.ip().is_loopback() || options.bearer_token.is_some() {
        return Ok(());
    }
    Err(crate::Error::Exposed { addr })
}

impl crate::Host {
    /// Serves `selection` of this host's tools over MCP's streamable-HTTP transport at
    /// `/mcp` on `listener` (plus `GET /healthz`), until `shutdown` resolves; then running
    /// calls get `[serve] drain_ms` to finish, the rest are cancelled, and it returns. A
    /// non-loopback listener without a bearer token is refused ([`crate::Error::Exposed`]).
    ///
    /// ```no_run
    /// # async fn demo(host: toolhost::Host) -> toolhost::Result<()> {
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8765").await.unwrap();
    /// let options = toolhost::HttpOptions::default().with_bearer_token("s3cret");
    /// let stop = async { let _ = tokio::signal::ctrl_c().await; };
    /// host.serve_mcp_http(toolhost::Selection::default(), listener, options, stop).await
    /// # }
    /// ```
    pub async fn serve_mcp_http(
        &self,
        selection: crate::Selection,
        listener: tokio::net::TcpListener,
        options: HttpOptions,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> crate::Result<()> {
        let shared = Shared::new(self.clone(), selection);
        serve(shared, listener, options, shutdown).await
    }
}

/// Serves `shared` over streamable HTTP on `listener` until `shutdown` resolves, then
/// drains and returns.
pub(crate) async fn serve(
    shared: Arc<Shared>,
    listener: tokio::net::TcpListener,
    options: HttpOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> crate::Result<()> {
    let addr = listener.local_addr().map_err(crate::Error::Http)?;
    check_exposure(addr, &options)?;
    let config = shared.host.config();
    let serve = &config.config.serve;
    let origins: Vec<String> = LOCAL_ORIGINS
        .iter()
        .map(|o| o.to_string())
        .chain(serve.allowed_origins.iter().cloned())
        .collect();
    let limits = connections::Limits {
        max_connections: serve
            .max_connections
            .unwrap_or_else(connections::default_max_connections),
        header_timeout: serve
            .header_timeout_ms
            .map_or(connections::DEFAULT_HEADER_TIMEOUT, Duration::from_millis),
    };
    let max_body = serve
        .max_request_bytes
        .unwrap_or(super::guard::DEFAULT_MAX_LINE_BYTES);
    let sessions = Arc::new(sessions::Sessions::new(
        serve.max_sessions.unwrap_or(sessions::DEFAULT_MAX_SESSIONS),
        serve
            .session_idle_ms
            .map_or(sessions::DEFAULT_SESSION_IDLE, Duration::from_millis),
        max_body,
        limits.header_timeout,
    ));
    let polling = Arc::new(polling::PollingSessions::new(
        sessions.manager.clone(),
        serve.sse_poll_after_ms.map(Duration::from_millis),
    ));
    let sessions_closed = CancellationToken::new();
    let mut http_config = StreamableHttpServerConfig::default()
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_cancellation_token(sessions_closed.clone())
        .with_max_request_body_bytes(max_body)
        .with_legacy_session_mode(!options.stateless)
        .with_json_response(options.stateless);
    if !addr.ip().is_loopback() {
        // Reached under whatever name the deployment gives it; the token guards it.
        http_config = http_config.disable_allowed_hosts();
    }
    drop(config);

    let mcp = {
        let shared = shared.clone();
        let stateless = options.stateless;
        let factory = move || Ok(McpServer::new(shared.clone(), None).with_stateless(stateless));
        match options.stateless {
            true => Router::new()
                .nest_service(
                    "/mcp",
                    StreamableHttpService::new(
                        factory,
                        Arc::new(NeverSessionManager::default()),
                        http_config,
                    ),
                )
                .layer(axum::middleware::from_fn_with_state(
                    stateless_cancel::Tracking {
                        running: Arc::default(),
                        max_bytes: max_body,
                        timeout: limits.header_timeout,
                    },
                    stateless_cancel::track,
                )),
            false => Router::new()
                .nest_service(
                    "/mcp",
                    StreamableHttpService::new(factory, polling, http_config),
                )
                .layer(axum::middleware::from_fn_with_state(
                    sessions.clone(),
                    sessions::cap,
                )),
        }
    };
    let auth = auth::Auth {
        token: options.bearer_token.map(|t| Arc::from(t.into_bytes())),
        source: Arc::from(options.token_source.unwrap_or_default()),
        body_timeout: limits.header_timeout,
        max_bytes: max_body,
    };
    // Outermost first: the token, then the body's deadline, then (sessions) the cap or
    // (stateless) the cancellation tracker.
    let app = mcp
        .layer(axum::middleware::from_fn(retry_after::add))
        .layer(axum::middleware::from_fn_with_state(
            body::BodyLimits {
                timeout: limits.header_timeout,
                max_bytes: max_body,
            },
            body::deadline,
        ))
        .layer(axum::middleware::from_fn_with_state(
            auth,
            auth::authenticate,
        ))
        .merge(
            Router::new()
                .route("/healthz", get(healthz))
                .with_state(shared.clone()),
        )
        .layer(axum::middleware::from_fn(close_after_refusal));

    let stop_accepting = CancellationToken::new();
    let mut server = tokio::spawn(connections::serve(
        listener,
        app,
        limits,
        stop_accepting.clone(),
    ));
    tokio::select! {
        served = &mut server => {
            return match served {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(crate::Error::Http(e)),
                Err(e) => Err(crate::Error::Http(std::io::Error::other(e))),
            };
        }
        () = shutdown => {}
    }
    tracing::info!("shutting down: draining running calls");
    stop_accepting.cancel();
    shared.gate.drain(shared.drain_period).await;
    // Answers are on their way: let them out, then close every session's stream.
    tokio::time::sleep(Duration::from_millis(100)).await;
    sessions_closed.cancel();
    if tokio::time::timeout(Duration::from_secs(5), &mut server)
        .await
        .is_err()
    {
        tracing::warn!("connections still open 5 s after shutdown; closing them");
        server.abort();
    }
    Ok(())
}

/// Longest `/healthz` waits for the store's answer (its own check gives up after 2 s).
const STORE_HEALTH_BOUND: std::time::Duration = std::time::Duration::from_secs(3);

/// `GET /healthz`: the tools, and the store's health (`"status": "degraded"` when the store
/// cannot serve calls: tools that do not use it still work, so the answer stays 200).
async fn healthz(State(shared): State<Arc<Shared>>) -> Response {
    let host = shared.host.clone();
    let counted =
        tokio::task::spawn_blocking(move || (host.entries(None).len(), host.generation()));
    let host = shared.host.clone();
    let backend_name = host.store_backend_name();
    let store = tokio::time::timeout(
        STORE_HEALTH_BOUND,
        tokio::task::spawn_blocking(move || host.store_health()),
    );
    let (counted, store) = tokio::join!(counted, store);
    let counted = counted.unwrap_or_default();
    let store = match store {
        Ok(Ok((backend, true, _))) => serde_json::json!({"backend": backend, "ok": true}),
        Ok(Ok((backend, false, message))) => {
            serde_json::json!({"backend": backend, "ok": false, "message": message})
        }
        Ok(Err(_)) | Err(_) => serde_json::json!({
            "backend": backend_name,
            "ok": false,
            "message": format!(
                "no answer from the store within {} s",
                STORE_HEALTH_BOUND.as_secs()
            ),
        }),
    };
    let status = if store["ok"] == true {
        "ok"
    } else {
        "degraded"
    };
    let body = serde_json::json!({
        "status": status,
        "tools": counted.0,
        "generation": counted.1,
        "store": store,
    });
    json_response(StatusCode::OK, &body)
}

/// Marks every refusal (4xx) `Connection: close`.
///
/// A guard (token, `Origin`, `Host`, body limit) answers before reading the request body;
/// hyper then closes the connection after the answer when the unread body is not already
/// buffered. Without this header a keep-alive client does not know that and sends its next
/// request down a connection that is closing, which fails as "server disconnected" — a
/// race that depends on how the client's writes were split into packets. With the header,
/// the client opens a new connection for the next request.
async fn close_after_refusal(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    if response.status().is_client_error() {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

fn json_response(status: StatusCode, body: &serde_json::Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_port_binds_loopback() {
        assert_eq!(
            parse_addr("8765").unwrap(),
            "127.0.0.1:8765".parse().unwrap()
        );
        assert_eq!(
            parse_addr(":8765").unwrap(),
            "127.0.0.1:8765".parse().unwrap()
        );
        assert_eq!(
            parse_addr("0.0.0.0:80").unwrap(),
            "0.0.0.0:80".parse().unwrap()
        );
        assert!(parse_addr("nonsense:port").is_err());
    }

    #[test]
    fn exposing_without_a_token_is_refused() {
        let public: SocketAddr = "0.0.0.0:1".parse().unwrap();
        let loopback: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let open = HttpOptions::default();
        assert!(check_exposure(loopback, &open).is_ok());
        let refused = check_exposure(public, &open).unwrap_err().to_string();
        assert!(refused.contains("auth_token_env"), "{refused}");
        assert!(check_exposure(public, &open.with_bearer_token("t")).is_ok());
    }

    #[test]
    fn tokens_never_show_in_debug_output() {
        let options = HttpOptions::default().with_bearer_token("s3cret");
        assert!(!format!("{options:?}").contains("s3cret"));
    }
}
