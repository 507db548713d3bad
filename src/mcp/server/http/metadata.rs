//! `GET /.well-known/oauth-protected-resource` (RFC 9728), served when `[serve.oauth]` is
//! set, without a token: it tells an MCP client which authorization server issues tokens
//! for this server (`authorization_servers`), for which resource (`resource`, the
//! configured `audience`), with which scopes, sent how (`header` only). The same document
//! answers under any path suffix (`…/oauth-protected-resource/mcp`), where clients look
//! first for a server whose resource has a path.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use std::sync::Arc;

/// The well-known path of the document.
pub(crate) const PATH: &str = "/.well-known/oauth-protected-resource";

/// The metadata document and where clients are told to find it.
pub(crate) struct Metadata {
    document: String,
    /// The document's URL, derived from an `http(s)` audience (`None`: from the request's
    /// `Host`).
    url: Option<String>,
}

impl Metadata {
    /// The document for `audience` issued by `issuer`, with `scopes`.
    pub(crate) fn new(issuer: &str, audience: &str, scopes: &[String]) -> Self {
        let document = serde_json::json!({
            "resource": audience,
            "authorization_servers": [issuer],
            "scopes_supported": scopes,
            "bearer_methods_supported": ["header"],
        })
        .to_string();
        Self {
            document,
            url: url_for(audience),
        }
    }

    /// The document's URL for a challenge (`resource_metadata="…"`) to `request`.
    pub(crate) fn url(&self, request: &Request) -> String {
        if let Some(url) = &self.url {
            return url.clone();
        }
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            // A value that could break out of the quoted challenge parameter is not used.
            .filter(|h| !h.contains(['"', '\\', ' ']))
            .unwrap_or("localhost");
        format!("http://{host}{PATH}/mcp")
    }
}

/// RFC 9728 §3.1: the well-known path goes between the audience's origin and its path.
fn url_for(audience: &str) -> Option<String> {
    let (scheme, rest) = audience.split_once("://")?;
    if !matches!(scheme, "http" | "https") || audience.contains(['"', '\\', ' ', '?', '#']) {
        return None;
    }
    let (authority, path) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    if authority.is_empty() {
        return None;
    }
    let path = path.trim_end_matches('/');
    Some(format!("{scheme}://{authority}{PATH}{path}"))
}

/// `GET /.well-known/oauth-protected-resource[/…]`.
pub(crate) async fn serve(State(metadata): State<Arc<Metadata>>) -> Response {
    let mut response = Response::new(Body::from(metadata.document.clone()));
    *response.status_mut() = StatusCode::OK;
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
    fn the_metadata_url_puts_the_well_known_path_before_the_resource_path() {
        assert_eq!(
            url_for("https://mcp.example.com/mcp").as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(
            url_for("https://mcp.example.com").as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource")
        );
        assert_eq!(url_for("api://toolhost"), None);
        assert_eq!(url_for("https://a\"b/"), None);
    }
}
