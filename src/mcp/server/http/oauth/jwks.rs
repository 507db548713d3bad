//! Reading the issuer's signing keys (a JWKS) from `jwks_url` or `jwks_file`, bounded: a
//! hostile or broken key server gets [`FETCH_TIMEOUT`] and [`MAX_JWKS_BYTES`], never the
//! host's memory or a request's whole life.

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

/// Largest JWKS read (real ones are a few KiB).
pub(super) const MAX_JWKS_BYTES: usize = 256 * 1024;
/// Longest a JWKS fetch may take, connecting included.
pub(super) const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// Most keys kept from one JWKS.
const MAX_KEYS: usize = 64;

/// Where the keys come from.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    /// `jwks_url`.
    Url(String),
    /// `jwks_file`.
    File(PathBuf),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Url(url) => write!(f, "serve.oauth.jwks_url {url}"),
            Self::File(path) => write!(f, "serve.oauth.jwks_file {}", path.display()),
        }
    }
}

/// The usable keys of a JWKS by `kid` (a key without one is kept under `""`).
pub(super) type Keys = HashMap<String, Jwk>;

impl Source {
    /// Reads and parses the JWKS; the error says what went wrong, for the log.
    pub(super) async fn load(&self, client: &reqwest::Client) -> Result<Keys, String> {
        let bytes = match self {
            Self::Url(url) => fetch(client, url).await?,
            Self::File(path) => {
                let path = path.clone();
                tokio::task::spawn_blocking(move || {
                    crate::bounded_read::read_regular(&path, MAX_JWKS_BYTES as u64)
                })
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?
            }
        };
        parse(&bytes)
    }
}

/// GET `url` within [`FETCH_TIMEOUT`], at most [`MAX_JWKS_BYTES`] of body.
async fn fetch(client: &reqwest::Client, url: &str) -> Result<Vec<u8>, String> {
    let reading = async {
        let mut response = client.get(url).send().await.map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("HTTP status {}", response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
            if body.len() + chunk.len() > MAX_JWKS_BYTES {
                return Err(format!("the JWKS is larger than {MAX_JWKS_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    };
    tokio::time::timeout(FETCH_TIMEOUT, reading)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {} s", FETCH_TIMEOUT.as_secs())))
}

/// The keys of a JWKS document; a key this host cannot use (an unknown type or curve, a
/// symmetric key) is skipped, so one odd key does not take the others down.
pub(super) fn parse(bytes: &[u8]) -> Result<Keys, String> {
    #[derive(serde::Deserialize)]
    struct Document {
        keys: Vec<serde_json::Value>,
    }
    let document: Document =
        serde_json::from_slice(bytes).map_err(|e| format!("not a JWKS ({e})"))?;
    let mut keys = Keys::new();
    for key in document.keys.into_iter().take(MAX_KEYS) {
        let Ok(jwk) = serde_json::from_value::<Jwk>(key) else {
            continue;
        };
        // Public signing keys only: symmetric keys are never accepted (HS* with a
        // published key is forgeable), nor keys of unknown types or for encryption.
        let signing = !matches!(
            jwk.common.public_key_use,
            Some(jsonwebtoken::jwk::PublicKeyUse::Encryption)
        );
        let public = matches!(
            jwk.algorithm,
            AlgorithmParameters::RSA(_)
                | AlgorithmParameters::EllipticCurve(_)
                | AlgorithmParameters::OctetKeyPair(_)
        );
        if !(signing && public) {
            continue;
        }
        keys.insert(jwk.common.key_id.clone().unwrap_or_default(), jwk);
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_and_symmetric_keys_are_skipped() {
        let jwks = br#"{"keys":[
            {"kty":"oct","kid":"hmac","k":"c2VjcmV0"},
            {"kty":"XYZ","kid":"odd"},
            {"kty":"OKP","crv":"Ed25519","kid":"enc","use":"enc","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},
            {"kty":"OKP","crv":"Ed25519","kid":"ed","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}
        ]}"#;
        let keys = parse(jwks).unwrap();
        assert_eq!(keys.keys().collect::<Vec<_>>(), ["ed"]);
        assert!(parse(b"[]").unwrap_err().contains("not a JWKS"));
    }
}
