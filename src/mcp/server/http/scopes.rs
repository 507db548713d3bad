//! `[serve.oauth.scopes]` at the HTTP door: a `tools/call` by an OAuth caller whose token
//! lacks a scope the tool needs gets 403 with `WWW-Authenticate: Bearer
//! error="insufficient_scope", scope="…"` — the answer an MCP client reacts to by asking
//! its user for a token with more scopes. The handler checks again (a JSON-RPC error), and
//! `ctx.call` too, so no route around this one reaches the tool.
//!
//! `resources/read` and `prompts/get` are gated the same way by the scopes their resource
//! or prompt needs (by toolset, name or URI), and so are watching a URI
//! (`resources/subscribe`, each URI of a `subscriptions/listen`). Listings are not: `tools/list` still shows
//! every tool of the selection (a client learns what it could do with more scopes; the
//! listing is no secret once a caller is authenticated).

use super::super::subscriptions::MAX_RESOURCE_SUBSCRIPTIONS;
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
    /// The first scope `caller` lacks for `target`.
    fn missing(&self, target: &Target, caller: &Caller) -> Option<String> {
        let needed = match target {
            Target::Tool(tool) => self.host.required_scopes(tool, self.scope.as_deref()),
            Target::Resource(uri) => match self.host.resource_serving(uri) {
                Some((key, name, toolset)) => {
                    self.host.content_scopes(&toolset, &[uri, &key, &name])
                }
                None => Vec::new(),
            },
            Target::Prompt(name) => {
                let prompts = self.host.prompts();
                match prompts.iter().find(|p| &p.name == name) {
                    Some(prompt) => self.host.content_scopes(&prompt.toolset, &[name]),
                    None => Vec::new(),
                }
            }
        };
        needed.into_iter().find(|scope| !caller.may_use(scope))
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
        for target in targets(&bytes) {
            if let Some(scope) = self.missing(&target, caller) {
                let tool = target.name();
                tracing::warn!(
                    "HTTP: refused {} using {tool}: the token lacks the scope {scope}",
                    caller.id()
                );
                let id = crate::mcp::server::guard::prefix_id(&bytes);
                return Err(json_rpc_error(
                    StatusCode::FORBIDDEN,
                    FORBIDDEN,
                    &insufficient(tool, &scope),
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

/// What a request uses that a scope may guard.
#[derive(Debug, PartialEq)]
enum Target {
    /// `tools/call` of a tool.
    Tool(String),
    /// `resources/read` of a URI.
    Resource(String),
    /// `prompts/get` of a prompt.
    Prompt(String),
}

impl Target {
    /// Its name, as a refusal shows it.
    fn name(&self) -> &str {
        match self {
            Target::Tool(name) | Target::Resource(name) | Target::Prompt(name) => name,
        }
    }
}

/// What a message uses: the tools it calls, the resources it reads, the prompts it gets
/// (every one of a batch).
fn targets(body: &[u8]) -> Vec<Target> {
    let Ok(message) = serde_json::from_slice::<serde_json::Value>(body) else {
        return Vec::new();
    };
    let messages = match message {
        serde_json::Value::Array(batch) => batch,
        single => vec![single],
    };
    let param = |m: &serde_json::Value, key: &str| {
        m.pointer(&format!("/params/{key}"))?
            .as_str()
            .map(str::to_string)
    };
    messages
        .iter()
        .flat_map(|m| match m.get("method").and_then(|v| v.as_str()) {
            Some("tools/call") => param(m, "name").map(Target::Tool).into_iter().collect(),
            Some("resources/read" | "resources/subscribe") => {
                param(m, "uri").map(Target::Resource).into_iter().collect()
            }
            Some("prompts/get") => param(m, "name").map(Target::Prompt).into_iter().collect(),
            Some("subscriptions/listen") => watched_uris(m),
            _ => Vec::new(),
        })
        .collect()
}

/// The resource URIs a `subscriptions/listen` asks to watch: the ones the server looks at
/// (the first [`MAX_RESOURCE_SUBSCRIPTIONS`]), so watching needs the scope reading does.
fn watched_uris(message: &serde_json::Value) -> Vec<Target> {
    message
        .pointer("/params/notifications/resourceSubscriptions")
        .and_then(|uris| uris.as_array())
        .into_iter()
        .flatten()
        .take(MAX_RESOURCE_SUBSCRIPTIONS)
        .filter_map(|uri| uri.as_str().map(|uri| Target::Resource(uri.to_string())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tools a message calls.
    fn called_tools(body: &[u8]) -> Vec<String> {
        targets(body)
            .into_iter()
            .filter_map(|t| match t {
                Target::Tool(name) => Some(name),
                _ => None,
            })
            .collect()
    }

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

    #[test]
    fn subscribing_and_listening_to_a_uri_target_it_like_reading() {
        let subscribe = br#"{"method":"resources/subscribe","params":{"uri":"a://b"}}"#;
        assert_eq!(targets(subscribe), vec![Target::Resource("a://b".into())]);
        let listen = br#"{"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["a://1","a://2"]}}}"#;
        assert_eq!(
            targets(listen),
            vec![
                Target::Resource("a://1".into()),
                Target::Resource("a://2".into())
            ]
        );
    }

    #[test]
    fn a_listen_is_looked_at_for_its_first_thousand_uris_only() {
        let uris: Vec<String> = (0..5000).map(|i| format!("a://{i}")).collect();
        let listen = serde_json::json!({"method": "subscriptions/listen",
            "params": {"notifications": {"resourceSubscriptions": uris}}});
        let body = serde_json::to_vec(&listen).unwrap_or_default();
        assert_eq!(targets(&body).len(), MAX_RESOURCE_SUBSCRIPTIONS);
    }

    #[test]
    fn reads_and_prompts_are_targets_too() {
        let batch = br#"[{"method":"resources/read","params":{"uri":"a://b"}},{"method":"prompts/get","params":{"name":"p"}},{"method":"prompts/list"}]"#;
        assert_eq!(
            targets(batch),
            [Target::Resource("a://b".into()), Target::Prompt("p".into())]
        );
    }
}
