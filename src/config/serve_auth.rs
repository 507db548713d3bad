//! `[[serve.tokens]]` and `[serve.oauth]`: who may call the HTTP server. Checked when the
//! file loads, so a broken entry is an error naming its key instead of a server that
//! refuses everyone (or, worse, no one).

use crate::error::{Error, Result};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The token name `[serve] auth_token_env` (and `--auth-token-env`) stands for.
const DEFAULT_TOKEN_NAME: &str = crate::registry::Caller::DEFAULT_TOKEN;

/// `[[serve.tokens]]`: a named static bearer token.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) struct TokenConfig {
    /// The caller's id (`ctx.caller.id`) for requests with this token; unique.
    pub name: Option<String>,
    /// The environment variable holding the token (read by the CLI at start).
    pub token_env: Option<String>,
}

/// `[serve.oauth]`: an OAuth 2.1 resource server that accepts JWT access tokens.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) struct OAuthConfig {
    /// The authorization server: a token's `iss` must equal it; the metadata document
    /// names it.
    pub issuer: Option<String>,
    /// This server's resource identifier: a token's `aud` must contain it; the metadata
    /// document's `resource`.
    pub audience: Option<String>,
    /// Where the issuer publishes its signing keys (a JWKS, `https://`; `http://` only to
    /// a loopback address).
    pub jwks_url: Option<String>,
    /// A JWKS file instead (relative to the config file); read again on an unknown `kid`.
    pub jwks_file: Option<PathBuf>,
    /// `TOOL_OR_TOOLSET = "scope"`: a token needs the scope to call the tool (or any tool
    /// of the toolset).
    #[serde(default)]
    pub scopes: BTreeMap<String, String>,
}

/// Checks `[[serve.tokens]]` and `[serve.oauth]` of the file at `path` and resolves
/// `jwks_file` against its directory (`base`).
pub(crate) fn check(
    tokens: &[TokenConfig],
    oauth: Option<&mut OAuthConfig>,
    has_default_token: bool,
    base: &Path,
    path: &Path,
) -> Result<()> {
    let invalid = |message: String| Error::ConfigInvalid {
        path: path.to_path_buf(),
        message,
    };
    let mut names = BTreeSet::new();
    if has_default_token {
        names.insert(DEFAULT_TOKEN_NAME.to_string());
    }
    for (i, token) in tokens.iter().enumerate() {
        let key = format!("serve.tokens[{i}]");
        let name = nonempty(token.name.as_deref())
            .ok_or_else(|| invalid(format!("{key}.name: missing or empty")))?;
        nonempty(token.token_env.as_deref())
            .ok_or_else(|| invalid(format!("{key}.token_env: missing or empty")))?;
        if !names.insert(name.to_string()) {
            let taken = match name {
                DEFAULT_TOKEN_NAME if has_default_token => {
                    " (serve.auth_token_env's token is \
                                                            named \"default\")"
                }
                _ => "",
            };
            return Err(invalid(format!(
                "{key}.name: a token named \"{name}\" is already defined{taken}"
            )));
        }
    }
    let Some(oauth) = oauth else {
        return Ok(());
    };
    for key in ["issuer", "audience"] {
        let value = match key {
            "issuer" => &oauth.issuer,
            _ => &oauth.audience,
        };
        if nonempty(value.as_deref()).is_none() {
            return Err(invalid(format!("serve.oauth.{key}: missing or empty")));
        }
    }
    match (&oauth.jwks_url, &mut oauth.jwks_file) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "serve.oauth: set jwks_url or jwks_file, not both".to_string(),
            ));
        }
        (None, None) => {
            return Err(invalid(
                "serve.oauth: jwks_url or jwks_file is required (where the issuer's signing \
                 keys are)"
                    .to_string(),
            ));
        }
        (Some(url), None) => {
            if let Some(why) = jwks_url_problem(url) {
                return Err(invalid(format!("serve.oauth.jwks_url: {why}")));
            }
        }
        (None, Some(file)) => {
            if file.is_relative() {
                *file = base.join(&*file);
            }
        }
    }
    for (target, scope) in &oauth.scopes {
        if scope.is_empty() || scope.contains(|c: char| c.is_whitespace() || c == '"') {
            return Err(invalid(format!(
                "serve.oauth.scopes.{target}: a scope is one non-empty word without spaces \
                 or quotes"
            )));
        }
    }
    Ok(())
}

fn nonempty(value: Option<&str>) -> Option<&str> {
    value.filter(|v| !v.trim().is_empty())
}

/// Why `url` cannot be a JWKS address: keys fetched over plain HTTP could be swapped by
/// anyone on the path, so only `https://` — or `http://` to this machine — is accepted.
fn jwks_url_problem(url: &str) -> Option<&'static str> {
    if url.starts_with("https://") {
        return None;
    }
    let Some(rest) = url.strip_prefix("http://") else {
        return Some("must be an https:// URL");
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = match host.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
        _ => host,
    };
    match host {
        "localhost" | "127.0.0.1" | "[::1]" => None,
        _ => Some("must be an https:// URL (http:// only to localhost)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jwks_urls_are_https_or_loopback() {
        assert_eq!(jwks_url_problem("https://idp.example/jwks"), None);
        assert_eq!(jwks_url_problem("http://127.0.0.1:8080/jwks"), None);
        assert_eq!(jwks_url_problem("http://localhost/jwks"), None);
        assert!(jwks_url_problem("http://idp.example/jwks").is_some());
        assert!(jwks_url_problem("http://127.0.0.1.evil.example/").is_some());
        assert!(jwks_url_problem("file:///etc/passwd").is_some());
    }
}
