//! Where a `tools/call` came from, as telemetry and the audit log tell it: the transport,
//! the HTTP session, the client's name and version, and the W3C trace context the request
//! carried (`_meta.traceparent` on 2026-07-28, else the HTTP `traceparent` header).

use rmcp::model::Implementation;
use rmcp::service::{RequestContext, RoleServer};

/// The longest `traceparent`/`tracestate` value kept: a hostile peer's megabyte of header
/// text is not carried into every span (W3C values are 55 and at most 512 characters).
const MAX_TRACE_HEADER: usize = 512;

/// Where one call came from.
#[derive(Debug, Clone, Default)]
pub(crate) struct Origin {
    /// `stdio` or `http` (`network.transport` is `pipe` or `tcp`).
    pub(crate) transport: &'static str,
    /// The HTTP session (`Mcp-Session-Id`), if there is one.
    pub(crate) session_id: Option<String>,
    /// The client's `clientInfo` name and version, as it declared them.
    pub(crate) client: Option<(String, String)>,
    /// The W3C `traceparent` the request carried.
    pub(crate) traceparent: Option<String>,
    /// The W3C `tracestate` the request carried.
    pub(crate) tracestate: Option<String>,
}

impl Origin {
    /// The origin of the request behind `context` (HTTP when rmcp's HTTP transport handed
    /// it the request's parts, else stdio).
    pub(crate) fn of_request(context: &RequestContext<RoleServer>) -> Self {
        #[cfg(feature = "http")]
        let parts = context.extensions.get::<axum::http::request::Parts>();
        #[cfg(not(feature = "http"))]
        let parts: Option<&()> = None;
        let header = |name: &str| -> Option<String> {
            #[cfg(feature = "http")]
            {
                parts?.headers.get(name)?.to_str().ok().map(str::to_string)
            }
            #[cfg(not(feature = "http"))]
            {
                let _ = name;
                None
            }
        };
        // `_meta` first: it is the request's own, the header the connection's.
        let traceparent = context
            .meta
            .get_traceparent()
            .map(str::to_string)
            .or_else(|| header("traceparent"));
        let tracestate = context
            .meta
            .get_tracestate()
            .map(str::to_string)
            .or_else(|| header("tracestate"));
        let client = context.meta.client_info().or_else(|| {
            context
                .peer
                .peer_info()
                .map(|info| info.client_info.clone())
        });
        Self {
            transport: if parts.is_some() { "http" } else { "stdio" },
            session_id: header("mcp-session-id"),
            client: client.map(name_and_version),
            traceparent: traceparent.filter(|v| v.len() <= MAX_TRACE_HEADER),
            tracestate: tracestate.filter(|v| v.len() <= MAX_TRACE_HEADER),
        }
    }

    /// A call of a stdio session whose client declared `client` at `initialize`.
    pub(crate) fn stdio(client: Option<&Implementation>) -> Self {
        Self {
            transport: "stdio",
            // The two members read, not the whole declaration (icons, title, …) copied.
            client: client.map(|info| (info.name.clone(), info.version.clone())),
            ..Self::default()
        }
    }

    /// `network.transport` (OpenTelemetry): `pipe` for stdio, `tcp` for HTTP.
    pub(crate) fn network_transport(&self) -> &'static str {
        match self.transport {
            "http" => "tcp",
            _ => "pipe",
        }
    }
}

fn name_and_version(info: Implementation) -> (String, String) {
    (info.name, info.version)
}
