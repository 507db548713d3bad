//! `toolhost serve --http ADDR`: MCP's streamable-HTTP transport at `/mcp` (rmcp's tower
//! service under axum), with sessions or `--stateless`, and:
//!
//! - bearer-token auth ([`auth`]): static tokens (`[serve] auth_token_env` /
//!   `--auth-token-env`, named `default`, and `[[serve.tokens]]`) and OAuth 2.1 access
//!   tokens (`[serve.oauth]`, [`oauth`], with the RFC 9728 metadata at
//!   `/.well-known/oauth-protected-resource` ([`metadata`]) and per-tool scopes
//!   ([`scopes`])); a request without a valid `Authorization: Bearer …` gets 401 with
//!   `WWW-Authenticate: Bearer` and a JSON-RPC error; tokens are compared in constant time
//!   and never logged. The caller a token identifies is the call's `ctx.caller`. A
//!   non-loopback bind without any credentials refuses to start;
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
mod challenge;
mod connections;
mod metadata;
pub(crate) mod metrics;
mod oauth;
mod polling;
mod retry_after;
pub(crate) mod scopes;
mod session_owner;
mod sessions;
mod shared_service;
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
    /// The bearer token clients must send, if any (required on a non-loopback address,
    /// unless named tokens or `[serve.oauth]` are there); its callers are named `default`.
    pub bearer_token: Option<String>,
    /// Where the token came from, for the server's log (e.g. an environment variable's
    /// name; never told to a client).
    pub(crate) token_source: Option<String>,
    /// More tokens, by name (the caller's id), with where each came from.
    pub(crate) named_tokens: Vec<(String, String, Option<String>)>,
    /// `GET /metrics`, when the binary installed a metrics recorder.
    pub(crate) metrics: Option<metrics::MetricsRoute>,
    /// Threads serving connections when `[serve] http_threads` does not say.
    pub(crate) threads: Option<usize>,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("stateless", &self.stateless)
            .field("threads", &self.threads)
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .field(
                "named_tokens",
                &self
                    .named_tokens
                    .iter()
                    .map(|(name, _, _)| name)
                    .collect::<Vec<_>>(),
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

    /// Serve connections on `threads` threads of their own (at least 1), each with a
    /// single-threaded runtime, handing each new connection to the next in turn; the
    /// calling runtime's thread, which accepts them, is one of them. `[serve] http_threads`
    /// takes precedence. Without either, every connection is served on the calling runtime.
    /// One thread per core costs the least CPU per call: a connection's requests are
    /// served on its own thread (a session's messages cross to the thread that opened it).
    /// A request that takes long to read holds up the other connections of its thread.
    /// (The operator's `[serve] http_threads` is bounded by the config; this is the
    /// embedder's own choice, bounded by what the system lets it start.)
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads.max(1));
        self
    }

    /// Require `Authorization: Bearer <token>` on `/mcp`.
    pub fn with_bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// Also accept `token`, whose callers are `name` (`ctx.caller.id`; kind `token`).
    pub fn with_named_token(mut self, name: impl Into<String>, token: impl Into<String>) -> Self {
        self.named_tokens.push((name.into(), token.into(), None));
        self
    }

    /// A named token read from the environment variable `source` (named in the log).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn with_named_token_from(
        mut self,
        name: impl Into<String>,
        token: impl Into<String>,
        source: impl Into<String>,
    ) -> Self {
        self.named_tokens
            .push((name.into(), token.into(), Some(source.into())));
        self
    }

    /// Whether any static token is set.
    fn has_tokens(&self) -> bool {
        self.bearer_token.is_some() || !self.named_tokens.is_empty()
    }

    /// Serves `GET /metrics` (rendered by `render`; without the token when `public`).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn with_metrics(mut self, render: metrics::Render, public: bool) -> Self {
        self.metrics = Some(metrics::MetricsRoute { render, public });
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

/// Refuses a setup that would expose the tools unauthenticated beyond this machine
/// (`oauth`: `[serve.oauth]` is set).
pub(crate) fn check_exposure(
    addr: SocketAddr,
    options: &HttpOptions,
    oauth: bool,
) -> crate::Result<()> {
    if addr.ip().is_loopback() || options.has_tokens() || oauth {
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
    let options_threads = options.threads;
    let config = shared.host.config();
    check_exposure(addr, &options, config.config.serve.oauth.is_some())?;
    let oauth = oauth_gate(&shared).await?;
    let serve = &config.config.serve;
    let threads = serve.http_threads.or(options_threads).unwrap_or(1);
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
    let max_sessions = serve.max_sessions.unwrap_or(sessions::DEFAULT_MAX_SESSIONS);
    let sessions = Arc::new(sessions::Sessions::new(
        max_sessions,
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
                    shared_service::route(StreamableHttpService::new(
                        factory,
                        Arc::new(NeverSessionManager::default()),
                        http_config,
                    )),
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
                    shared_service::route(StreamableHttpService::new(
                        factory,
                        polling,
                        http_config,
                    )),
                )
                .layer(axum::middleware::from_fn_with_state(
                    sessions.clone(),
                    sessions::cap,
                ))
                .layer(axum::middleware::from_fn_with_state(
                    Arc::new(session_owner::Owners::new(
                        sessions.manager.clone(),
                        max_sessions,
                    )),
                    session_owner::bind,
                )),
        }
    };
    let metrics_route = options.metrics.clone();
    let (tokens, source) = static_tokens(options)?;
    // `/metrics` behind the token like `/mcp`, or (`metrics_public`) beside it.
    let (mcp, public_metrics) = match metrics_route {
        Some(route) if route.public => (mcp, Some(metrics::router(route.render))),
        Some(route) => (mcp.merge(metrics::router(route.render)), None),
        None => (mcp, None),
    };
    let auth = auth::Auth {
        tokens,
        source: Arc::from(source),
        oauth: oauth.clone(),
        body_timeout: limits.header_timeout,
        max_bytes: max_body,
    };
    let public = match &oauth {
        Some(oauth) => Router::new()
            .route(metadata::PATH, get(metadata::serve))
            .route(
                &format!("{}/{{*resource}}", metadata::PATH),
                get(metadata::serve),
            )
            .with_state(oauth.metadata.clone()),
        None => Router::new(),
    };
    // Outermost first: the token, then the body's deadline, then (sessions) the session's
    // owner and the cap or (stateless) the cancellation tracker.
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
        .merge(public)
        .merge(public_metrics.unwrap_or_default())
        .layer(axum::middleware::from_fn(close_after_refusal));

    let spread = Arc::new(connections::Spread::start(threads).map_err(crate::Error::Http)?);
    let stop_accepting = CancellationToken::new();
    let mut server = tokio::spawn(connections::serve(
        listener,
        app,
        limits,
        spread,
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

/// The static tokens of `options` (`bearer_token` as `default`) and where they came from,
/// for the log; two tokens of one name are an error.
fn static_tokens(options: HttpOptions) -> crate::Result<(Arc<[auth::StaticToken]>, String)> {
    let default = options.bearer_token.map(|token| {
        (
            crate::Caller::DEFAULT_TOKEN.to_string(),
            token,
            options.token_source,
        )
    });
    let mut tokens = Vec::new();
    let mut sources = Vec::new();
    for (name, token, source) in default.into_iter().chain(options.named_tokens) {
        if tokens.iter().any(|t: &auth::StaticToken| t.name == name) {
            return Err(crate::Error::HttpAuth(format!(
                "two bearer tokens are named \"{name}\" (the --auth-token-env / \
                 [serve] auth_token_env token is named \"default\")"
            )));
        }
        if let Some(source) = source {
            sources.push(format!("${source}"));
        }
        tokens.push(auth::StaticToken {
            name,
            token: token.into_bytes(),
        });
    }
    Ok((tokens.into(), sources.join(", ")))
}

/// The OAuth check of `[serve.oauth]` (`None` when it is not set): its scope table names
/// only known tools and toolsets, and its keys load (a `jwks_file` must; an unreachable
/// `jwks_url` is logged and tried again on the first token).
async fn oauth_gate(shared: &Arc<Shared>) -> crate::Result<Option<Arc<auth::OAuthGate>>> {
    let host = &shared.host;
    let (issuer, audience, source) = {
        let config = host.config();
        let Some(oauth) = &config.config.serve.oauth else {
            return Ok(None);
        };
        // The config check made sure both are set and exactly one key source is.
        let source = match (&oauth.jwks_url, &oauth.jwks_file) {
            (Some(url), _) => oauth::Source::Url(url.clone()),
            (None, Some(file)) => oauth::Source::File(file.clone()),
            (None, None) => {
                return Err(crate::Error::HttpAuth(
                    "serve.oauth: jwks_url or jwks_file is required".to_string(),
                ));
            }
        };
        let issuer = oauth.issuer.clone().unwrap_or_default();
        (issuer, oauth.audience.clone().unwrap_or_default(), source)
    };
    if let Some(target) = host.unknown_scope_targets().first() {
        return Err(crate::Error::HttpAuth(format!(
            "serve.oauth.scopes.{target}: no tool, toolset or [toolsets] composite is named \
             \"{target}\""
        )));
    }
    let from_file = matches!(source, oauth::Source::File(_));
    let verifier = oauth::Verifier::new(issuer.clone(), audience.clone(), source)
        .map_err(crate::Error::HttpAuth)?;
    match verifier.load().await {
        Ok(0) => tracing::warn!("OAuth: the issuer's JWKS holds no usable key"),
        Ok(_) => {}
        Err(why) if from_file => return Err(crate::Error::HttpAuth(why)),
        Err(why) => tracing::warn!("OAuth: cannot load the signing keys yet: {why}"),
    }
    let metadata = metadata::Metadata::new(&issuer, &audience, &host.configured_scopes());
    Ok(Some(Arc::new(auth::OAuthGate {
        verifier,
        metadata: Arc::new(metadata),
        scopes: scopes::ScopeCheck {
            host: host.clone(),
            scope: shared.selection.scope.clone(),
        },
    })))
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
        assert!(check_exposure(loopback, &open, false).is_ok());
        let refused = check_exposure(public, &open, false)
            .unwrap_err()
            .to_string();
        assert!(refused.contains("auth_token_env"), "{refused}");
        assert!(check_exposure(public, &open, true).is_ok());
        let named = HttpOptions::default().with_named_token("ci", "t");
        assert!(check_exposure(public, &named, false).is_ok());
        assert!(check_exposure(public, &open.with_bearer_token("t"), false).is_ok());
    }

    #[test]
    fn tokens_never_show_in_debug_output() {
        let options = HttpOptions::default()
            .with_bearer_token("s3cret")
            .with_named_token("ci", "t0ps3cret");
        let shown = format!("{options:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("ci"), "{shown}");
    }
}
