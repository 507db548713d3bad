//! The bearer-token check in front of `/mcp`, and who the caller is.
//!
//! A token is tried against every static token (`[[serve.tokens]]`, `auth_token_env` as
//! `default`; compared in constant time), then — with `[serve.oauth]` — as an OAuth access
//! token ([`super::oauth`]). The request then carries its [`Caller`] (an HTTP request
//! extension rmcp hands on to the handler). A loopback server without any credentials
//! configured lets everyone in as the anonymous local caller.
//!
//! A refusal is an MCP client's kind of answer: 401 with `WWW-Authenticate: Bearer` (plus
//! `resource_metadata="…"` with OAuth, and `error="invalid_token"` when a token was sent)
//! and a JSON-RPC error body (`-32001`) carrying the request's id when the body's first
//! bytes show it, so a client library reports the message instead of a bare "error
//! response". An OAuth caller calling a tool whose scope its token lacks gets 403 with
//! `error="insufficient_scope", scope="…"` ([`super::scopes`]). Where the server expects a
//! token from (an environment variable's name) is the operator's business: it goes to the
//! server's log at warn, never to an unauthenticated caller.

use super::challenge::json_rpc_error;
use super::metadata::Metadata;
use super::oauth::{Invalid, Verifier};
use crate::Caller;
use axum::body::{Body, HttpBody};
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;
use std::time::Duration;
use subtle::ConstantTimeEq;

/// The JSON-RPC error code of an unauthenticated request (the server-defined range; the
/// code MCP SDKs use for authentication failures).
pub(crate) const UNAUTHORIZED: i64 = -32001;

/// At most this much of a refused body is read to find the request's id.
const ID_PREFIX_BYTES: usize = 4096;

/// A static bearer token.
pub(crate) struct StaticToken {
    /// Its name: the caller's id.
    pub(crate) name: String,
    /// The token.
    pub(crate) token: Vec<u8>,
}

/// The OAuth side of the check.
pub(crate) struct OAuthGate {
    /// Checks access tokens.
    pub(crate) verifier: Verifier,
    /// The protected-resource metadata (its URL goes into every challenge).
    pub(crate) metadata: Arc<Metadata>,
    /// Answers which scopes a tool needs (`[serve.oauth.scopes]`).
    pub(crate) scopes: super::scopes::ScopeCheck,
}

/// The auth check's state.
#[derive(Clone)]
pub(crate) struct Auth {
    /// The static tokens (empty: none).
    pub(crate) tokens: Arc<[StaticToken]>,
    /// Where the tokens come from (e.g. environment variables' names), for the log.
    pub(crate) source: Arc<str>,
    /// `[serve.oauth]`, when set.
    pub(crate) oauth: Option<Arc<OAuthGate>>,
    /// How long a refused request's body gets to show its id (`[serve] header_timeout_ms`).
    pub(crate) body_timeout: Duration,
    /// `[serve] max_request_bytes`: never read more of a refused body than that.
    pub(crate) max_bytes: usize,
}

/// Why a request is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Refusal {
    Missing,
    Invalid(Option<String>),
}

impl Refusal {
    fn message(&self) -> String {
        match self {
            Self::Missing => "missing bearer token".to_string(),
            Self::Invalid(None) => "invalid bearer token".to_string(),
            Self::Invalid(Some(why)) => format!("invalid bearer token: {why}"),
        }
    }
}

/// Middleware: lets a request through only with a valid bearer token (when any is
/// configured), carrying its [`Caller`].
pub(crate) async fn authenticate(
    State(auth): State<Auth>,
    mut request: Request,
    next: Next,
) -> Response {
    if auth.tokens.is_empty() && auth.oauth.is_none() {
        request.extensions_mut().insert(Caller::anonymous());
        return next.run(request).await;
    }
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| {
            let (scheme, token) = value.split_once(' ')?;
            scheme
                .eq_ignore_ascii_case("bearer")
                .then_some(token.trim().to_string())
        });
    let caller = match given {
        None => Err(Refusal::Missing),
        Some(token) => match static_caller(&auth.tokens, &token) {
            Some(caller) => Ok(caller),
            None => match &auth.oauth {
                Some(oauth) => oauth
                    .verifier
                    .verify(&token)
                    .await
                    .map_err(|Invalid(why)| Refusal::Invalid(Some(why))),
                None => Err(Refusal::Invalid(None)),
            },
        },
    };
    let caller = match caller {
        Ok(caller) => caller,
        Err(refusal) => {
            log_refusal(&auth, &refusal);
            let metadata_url = auth.oauth.as_ref().map(|o| o.metadata.url(&request));
            let id = request_id(request.into_body(), &auth).await;
            return refused(&refusal, metadata_url.as_deref(), id.as_deref());
        }
    };
    if let Some(oauth) = &auth.oauth
        && caller.scopes().is_some()
    {
        request = match oauth
            .scopes
            .check(
                request,
                &caller,
                (auth.max_bytes, auth.body_timeout),
                &oauth.metadata,
            )
            .await
        {
            Ok(request) => request,
            Err(forbidden) => return forbidden,
        };
    }
    request.extensions_mut().insert(caller);
    next.run(request).await
}

/// The caller of the static token `given`: every token is compared, in constant time.
fn static_caller(tokens: &[StaticToken], given: &str) -> Option<Caller> {
    let mut matched = None;
    for token in tokens {
        if bool::from(given.as_bytes().ct_eq(&token.token)) && matched.is_none() {
            matched = Some(&token.name);
        }
    }
    matched.map(Caller::token)
}

fn log_refusal(auth: &Auth, refusal: &Refusal) {
    match (&*auth.source, refusal) {
        (_, Refusal::Invalid(Some(why))) => {
            tracing::warn!("HTTP: refused a request: invalid bearer token ({why})")
        }
        ("", _) => tracing::warn!("HTTP: refused a request: {}", refusal.message()),
        (source, Refusal::Missing) => tracing::warn!(
            "HTTP: refused a request without 'Authorization: Bearer <token>' (tokens are in \
             {source})"
        ),
        (source, Refusal::Invalid(None)) => {
            tracing::warn!("HTTP: refused a request whose bearer token is none of {source}")
        }
    }
}

/// The id of the JSON-RPC request in `body`, read from its first bytes (at most
/// [`ID_PREFIX_BYTES`], within the body deadline), if they show it.
pub(super) async fn request_id(body: Body, auth: &Auth) -> Option<String> {
    let max = ID_PREFIX_BYTES.min(auth.max_bytes);
    let mut body = std::pin::pin!(body);
    let mut prefix = Vec::new();
    let reading = async {
        while prefix.len() < max
            && let Some(Ok(frame)) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await
        {
            if let Ok(data) = frame.into_data() {
                let room = max.saturating_sub(prefix.len()).min(data.len());
                prefix.extend_from_slice(&data[..room]);
            }
        }
    };
    // A body that does not arrive in time is answered with what came of it.
    let _ = tokio::time::timeout(auth.body_timeout, reading).await;
    crate::mcp::server::guard::prefix_id(&prefix)
}

/// The 401 answer: `WWW-Authenticate: Bearer …` and a JSON-RPC error with `raw_id` (the
/// id's JSON text as the client wrote it; `null` when unknown).
fn refused(refusal: &Refusal, metadata_url: Option<&str>, raw_id: Option<&str>) -> Response {
    let mut challenge = vec![];
    if let Refusal::Invalid(why) = refusal {
        challenge.push("error=\"invalid_token\"".to_string());
        if let Some(why) = why {
            challenge.push(format!("error_description=\"{why}\""));
        }
    }
    if let Some(url) = metadata_url {
        challenge.push(format!("resource_metadata=\"{url}\""));
    }
    json_rpc_error(
        StatusCode::UNAUTHORIZED,
        UNAUTHORIZED,
        &refusal.message(),
        &challenge,
        raw_id,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_a_json_rpc_error_with_the_id() {
        let response = refused(&Refusal::Invalid(None), None, Some("\"a\""));
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            response.headers()[header::WWW_AUTHENTICATE],
            "Bearer error=\"invalid_token\""
        );
        let missing = refused(&Refusal::Missing, None, None);
        assert_eq!(missing.headers()[header::WWW_AUTHENTICATE], "Bearer");
        let pointed = refused(&Refusal::Missing, Some("https://h/.well-known/x"), None);
        assert_eq!(
            pointed.headers()[header::WWW_AUTHENTICATE],
            "Bearer resource_metadata=\"https://h/.well-known/x\""
        );
    }

    #[test]
    fn every_static_token_names_its_caller() {
        let tokens = [
            StaticToken {
                name: "default".into(),
                token: b"one".to_vec(),
            },
            StaticToken {
                name: "ci".into(),
                token: b"two".to_vec(),
            },
        ];
        assert_eq!(static_caller(&tokens, "two"), Some(Caller::token("ci")));
        assert_eq!(
            static_caller(&tokens, "one"),
            Some(Caller::token("default"))
        );
        assert_eq!(static_caller(&tokens, "three"), None);
        assert_eq!(static_caller(&tokens, ""), None);
    }
}
