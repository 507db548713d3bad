//! Who made a call: the identity a transport vouched for, carried by every call's context
//! (`CallContext::caller`, Lua's `ctx.caller`) and inherited by the calls it makes.

use std::sync::Arc;

/// How a caller was identified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CallerKind {
    /// Nobody vouched for anyone: the user who started the process (stdio, the command
    /// line, an embedder's own calls) or an unauthenticated client of a loopback HTTP
    /// server.
    Local,
    /// A static bearer token (`[[serve.tokens]]`, `auth_token_env`): the id is its name.
    Token,
    /// An OAuth 2.1 access token (`[serve.oauth]`): the id is the JWT's `sub`.
    OAuth,
}

impl CallerKind {
    /// `"local"`, `"token"` or `"oauth"` (Lua's `ctx.caller.kind`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Token => "token",
            Self::OAuth => "oauth",
        }
    }
}

/// Who made a call: a kind and an id (the token's name, the JWT's `sub`, or `local`), and
/// for OAuth the client (`client_id`, else `azp`) and the token's scopes.
///
/// The default is the local caller, which costs no allocation: most calls are local.
/// ```
/// use toolhost::{Caller, CallerKind};
/// let ci = Caller::token("ci");
/// assert_eq!((ci.id(), ci.kind()), ("ci", CallerKind::Token));
/// assert_eq!(Caller::default().id(), "local");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller(Option<Arc<Identified>>);

/// A caller some credential identified.
#[derive(Debug, PartialEq, Eq)]
struct Identified {
    kind: CallerKind,
    id: String,
    client_id: Option<String>,
    scopes: Option<Vec<String>>,
}

/// The id of the local caller.
const LOCAL: &str = "local";
/// The id of an unauthenticated client of a loopback HTTP server.
const ANONYMOUS: &str = "anonymous";

impl Caller {
    /// The name of the static token of `[serve] auth_token_env` / `--auth-token-env` (and
    /// of `HttpOptions::with_bearer_token`'s).
    pub const DEFAULT_TOKEN: &'static str = "default";

    /// The local user (stdio, the command line, in-process calls).
    pub fn local() -> Self {
        Self(None)
    }

    /// A client of a loopback HTTP server that needs no credentials: local, but another
    /// principal than the stdio user (its tasks are not theirs).
    pub fn anonymous() -> Self {
        Self::identified(CallerKind::Local, ANONYMOUS.to_string(), None, None)
    }

    /// The holder of the static token named `name`.
    pub fn token(name: impl Into<String>) -> Self {
        Self::identified(CallerKind::Token, name.into(), None, None)
    }

    /// The subject `sub` of an OAuth access token issued to `client_id`, with its scopes.
    pub fn oauth(sub: impl Into<String>, client_id: Option<String>, scopes: Vec<String>) -> Self {
        Self::identified(CallerKind::OAuth, sub.into(), client_id, Some(scopes))
    }

    fn identified(
        kind: CallerKind,
        id: String,
        client_id: Option<String>,
        scopes: Option<Vec<String>>,
    ) -> Self {
        Self(Some(Arc::new(Identified {
            kind,
            id,
            client_id,
            scopes,
        })))
    }

    /// How the caller was identified.
    pub fn kind(&self) -> CallerKind {
        self.0.as_ref().map_or(CallerKind::Local, |c| c.kind)
    }

    /// The token's name, the JWT's `sub`, `local` or `anonymous`.
    pub fn id(&self) -> &str {
        self.0.as_ref().map_or(LOCAL, |c| &c.id)
    }

    /// The OAuth client the token was issued to (`client_id`, else `azp`), if it says.
    pub fn client_id(&self) -> Option<&str> {
        self.0.as_ref().and_then(|c| c.client_id.as_deref())
    }

    /// The OAuth token's scopes; `None` for callers without scopes (local and static
    /// tokens, which `[serve.oauth.scopes]` does not restrict).
    pub fn scopes(&self) -> Option<&[String]> {
        self.0.as_ref().and_then(|c| c.scopes.as_deref())
    }

    /// Whether a tool needing `scope` may be called: always for a caller without scopes,
    /// else when the token has it.
    pub fn may_use(&self, scope: &str) -> bool {
        self.scopes()
            .is_none_or(|scopes| scopes.iter().any(|s| s == scope))
    }

    /// Who owns what this caller creates (tasks): the kind and the id, so a token named
    /// `alice` and an OAuth subject `alice` are different owners.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn principal(&self) -> String {
        format!("{}:{}", self.kind().as_str(), self.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_keep_principals_apart() {
        let token = Caller::token("alice");
        let oauth = Caller::oauth("alice", None, vec![]);
        assert_ne!(token.principal(), oauth.principal());
        assert_ne!(Caller::local().principal(), Caller::anonymous().principal());
    }

    #[test]
    fn only_oauth_callers_are_limited_by_scopes() {
        assert!(Caller::token("ci").may_use("admin"));
        assert!(Caller::local().may_use("admin"));
        let reader = Caller::oauth("u", None, vec!["read".into()]);
        assert!(reader.may_use("read"));
        assert!(!reader.may_use("admin"));
    }
}
