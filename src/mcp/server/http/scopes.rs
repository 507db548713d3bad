//! `[serve.oauth.scopes]` at the HTTP door: a `tools/call` by an OAuth caller whose token
//! lacks a scope the tool needs gets 403 with `WWW-Authenticate: Bearer
//! error="insufficient_scope", scope="…"` — the answer an MCP client reacts to by asking
//! its user for a token with more scopes. The handler checks again (a JSON-RPC error), and
//! `ctx.call` too, so no route around this one reaches the tool.
//!
//! Only `tools/call` is gated: `tools/list` still shows every tool of the selection (a
//! client learns what it could do with more scopes; the listing is no secret once a caller
//! is authenticated).

use super::challenge::json_rpc_error;
use super::metadata::Metadata;
use crate::Caller;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::response::Response;

/// The JSON-RPC error code of a call refused for a missing scope.
const FORBIDDEN: i64 = crate::mcp::server::INSUFFICIENT_SCOPE as i64;

/// Which scopes a tool needs, for one server.
pub(crate) struct ScopeCheck {
    /// The host whose `[serve.oauth.scopes]` applies.
    pub(crate) host: crate::Host,
    /// The server's scope overlay (tools are looked up as its callers see them).
    pub(crate) scope: Option<String>,
}

impl ScopeCheck {
    /// The first scope `caller` lacks for calling `tool`.
    fn missing(&self, tool: &str, caller: &Caller) -> Option<String> {
        self.host
            .required_scopes(tool, self.scope.as_deref())
            .into_iter()
            .find(|scope| !caller.may_use(scope))
    }

    /// Lets `request` through (its body read and put back) unless it is a `tools/call` of
    /// a tool whose scope `caller` lacks; then the 403 answer.
    pub(super) async fn check(
        &self,
        request: Request,
        caller: &Caller,
        (max_bytes, body_timeout): (usize, std::time::Duration),
        metadata: &Metadata,
    ) -> Result<Request, Response> {
        if request.method() != Method::POST || !self.host.has_scope_table() {
            return Ok(request);
        }
        let url = metadata.url(&request);
        let (parts, body) = request.into_parts();
        let bytes = super::body::read_limited(body, max_bytes, body_timeout).await?;
        for tool in called_tools(&bytes) {
            if let Some(scope) = self.missing(&tool, caller) {
                tracing::warn!(
                    "HTTP: refused {} calling {tool}: the token lacks the scope {scope}",
                    caller.id()
                );
                let id = crate::mcp::server::guard::prefix_id(&bytes);
                return Err(json_rpc_error(
                    StatusCode::FORBIDDEN,
                    FORBIDDEN,
                    &insufficient(&tool, &scope),
                    &[
                        "error=\"insufficient_scope\"".to_string(),
                        format!("scope=\"{scope}\""),
                        format!("resource_metadata=\"{url}\""),
                    ],
                    id.as_deref(),
                ));
            }
        }
        Ok(Request::from_parts(parts, Body::from(bytes)))
    }
}

/// The message of a refusal for a missing scope.
fn insufficient(tool: &str, scope: &str) -> String {
    format!("insufficient scope: {tool} needs the OAuth scope \"{scope}\"")
}

/// The tools a message calls (`tools/call`; every one of a batch).
fn called_tools(body: &[u8]) -> Vec<String> {
    let Ok(message) = serde_json::from_slice::<serde_json::Value>(body) else {
        // Not JSON: rmcp refuses it; nothing is called.
        return Vec::new();
    };
    let messages = match message {
        serde_json::Value::Array(batch) => batch,
        single => vec![single],
    };
    messages
        .iter()
        .filter(|m| m.get("method").and_then(|v| v.as_str()) == Some("tools/call"))
        .filter_map(|m| m.pointer("/params/name")?.as_str().map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_tool_calls_name_tools() {
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rm"}}"#;
        assert_eq!(called_tools(call), ["rm"]);
        let list = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"rm"}}"#;
        assert!(called_tools(list).is_empty());
        let batch = br#"[{"method":"tools/call","params":{"name":"a"}},{"method":"tools/call","params":{"name":"b"}}]"#;
        assert_eq!(called_tools(batch), ["a", "b"]);
        assert!(called_tools(b"not json").is_empty());
    }
}
