//! `[serve.oauth]`: the HTTP server as an OAuth 2.1 resource server. A bearer token that is
//! not a static one must be a JWT signed by one of the issuer's keys (its JWKS, by `kid`,
//! cached), issued by `issuer` for `audience`, within its `exp`/`nbf` (60 s leeway), with
//! an asymmetric algorithm of [`ALLOWED`] — never `none`, never HMAC (a published key would
//! sign anything). An unknown `kid` reloads the keys (key rotation), at most once per
//! [`REFETCH_INTERVAL`], so tokens with made-up `kid`s cannot turn the server into a
//! flood of requests to the key server. All crypto is the `jsonwebtoken` crate's.

mod jwks;

pub(crate) use jwks::Source;

use crate::Caller;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, errors::ErrorKind};
use parking_lot::RwLock;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The signature algorithms accepted: asymmetric ones only.
const ALLOWED: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Clock skew allowed on `exp` and `nbf`, in seconds.
const LEEWAY_SECS: u64 = 60;
/// Least time between two reloads of the keys for an unknown `kid`.
const REFETCH_INTERVAL: Duration = Duration::from_secs(30);
/// Keys older than this are reloaded before use, so a key the issuer withdrew stops
/// working within the hour.
const MAX_KEY_AGE: Duration = Duration::from_secs(3600);

/// Checks OAuth access tokens.
pub(crate) struct Verifier {
    issuer: String,
    audience: String,
    source: Source,
    client: reqwest::Client,
    keys: RwLock<Loaded>,
    /// Held while the keys reload: one reload at a time; others wait for its result.
    reloading: tokio::sync::Mutex<Option<Instant>>,
}

/// The keys and when they were loaded (`None`: never).
struct Loaded {
    keys: Arc<jwks::Keys>,
    at: Option<Instant>,
}

/// Why a token is refused (told to the client as `error_description`: it says what to fix,
/// never anything about the keys or the configuration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invalid(pub(crate) String);

impl Verifier {
    /// A verifier for tokens of `issuer` for `audience`, with keys from `source` (not read
    /// yet: see [`Verifier::load`]).
    pub(crate) fn new(issuer: String, audience: String, source: Source) -> Result<Self, String> {
        // rmcp's client side installs the same provider; whichever comes first wins.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(jwks::FETCH_TIMEOUT)
            .connect_timeout(jwks::FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("cannot make an HTTP client for the JWKS: {e}"))?;
        Ok(Self {
            issuer,
            audience,
            source,
            client,
            keys: RwLock::new(Loaded {
                keys: Arc::default(),
                at: None,
            }),
            reloading: tokio::sync::Mutex::new(None),
        })
    }

    /// Loads the keys (at start): `Err` says why they could not be read.
    pub(crate) async fn load(&self) -> Result<usize, String> {
        let keys = self
            .source
            .load(&self.client)
            .await
            .map_err(|why| format!("{}: {why}", self.source))?;
        let count = keys.len();
        *self.keys.write() = Loaded {
            keys: Arc::new(keys),
            at: Some(Instant::now()),
        };
        Ok(count)
    }

    /// The caller `token` identifies, or why it is refused.
    pub(crate) async fn verify(&self, token: &str) -> Result<Caller, Invalid> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| Invalid("not a valid JWT (or an unsupported alg)".into()))?;
        if !ALLOWED.contains(&header.alg) {
            return Err(Invalid(format!(
                "the algorithm {:?} is not accepted",
                header.alg
            )));
        }
        let kid = header.kid.clone().unwrap_or_default();
        let jwk = self
            .key(&kid)
            .await
            .ok_or_else(|| Invalid("signed by an unknown key".into()))?;
        // A key published for one algorithm is not used with another.
        if let Some(bound) = jwk.common.key_algorithm
            && bound != jsonwebtoken::jwk::KeyAlgorithm::from(header.alg)
        {
            return Err(Invalid("the algorithm does not match the key".into()));
        }
        let key =
            DecodingKey::from_jwk(&jwk).map_err(|_| Invalid("signed by an unusable key".into()))?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = LEEWAY_SECS;
        validation.validate_nbf = true;
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map_err(|e| Invalid(reason(e.kind())))?;
        data.claims
            .into_caller()
            .ok_or_else(|| Invalid(reason(&ErrorKind::MissingRequiredClaim("sub".into()))))
    }

    /// The key `kid` (`""`: the token names none, so the only key), reloading the keys
    /// when it is unknown or they are old, at most once per [`REFETCH_INTERVAL`] (old keys
    /// keep working while a reload fails).
    async fn key(&self, kid: &str) -> Option<jsonwebtoken::jwk::Jwk> {
        let (found, stale) = self.lookup(kid);
        if found.is_some() && !stale {
            return found;
        }
        let mut last = self.reloading.lock().await;
        // Someone else may have reloaded while this one waited.
        let (found_now, stale_now) = self.lookup(kid);
        if found_now.is_some() && !stale_now {
            return found_now;
        }
        // Rate-limited whatever the reason: a key server that is down must not be asked
        // (and waited for) on every request once the keys are old.
        if last.is_some_and(|at| at.elapsed() < REFETCH_INTERVAL) {
            return found_now;
        }
        *last = Some(Instant::now());
        if let Err(why) = self.load().await {
            // The old keys stay: an unreachable key server must not lock everyone out.
            tracing::warn!("OAuth: cannot reload the signing keys: {why}");
        }
        self.lookup(kid).0
    }

    /// The key `kid` among the loaded ones, and whether they are due for a reload.
    fn lookup(&self, kid: &str) -> (Option<jsonwebtoken::jwk::Jwk>, bool) {
        let loaded = self.keys.read();
        let stale = loaded.at.is_none_or(|at| at.elapsed() >= MAX_KEY_AGE);
        let found = match (kid, loaded.keys.len()) {
            ("", 1) => loaded.keys.values().next().cloned(),
            _ => loaded.keys.get(kid).cloned(),
        };
        (found, stale)
    }
}

/// The claims read from a token (beyond those `jsonwebtoken` validates).
#[derive(serde::Deserialize)]
struct Claims {
    /// Required (checked after decoding: a missing one is named like the other claims).
    sub: Option<String>,
    client_id: Option<String>,
    azp: Option<String>,
    /// RFC 8693/9068: space-separated.
    scope: Option<String>,
    /// Some issuers list scopes as an array.
    scp: Option<Vec<String>>,
}

impl Claims {
    fn into_caller(self) -> Option<Caller> {
        let sub = self.sub.filter(|s| !s.is_empty())?;
        let mut scopes: Vec<String> = self
            .scope
            .iter()
            .flat_map(|s| s.split_whitespace().map(str::to_string))
            .chain(self.scp.unwrap_or_default())
            .collect();
        scopes.sort();
        scopes.dedup();
        Some(Caller::oauth(sub, self.client_id.or(self.azp), scopes))
    }
}

/// What the client is told about a refused token.
fn reason(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::ExpiredSignature => "the token has expired",
        ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)",
        ErrorKind::InvalidAudience => "the token is not for this server (aud)",
        ErrorKind::InvalidIssuer => "the token is from another issuer (iss)",
        ErrorKind::InvalidSignature => "the signature does not verify",
        ErrorKind::InvalidAlgorithm => "the algorithm does not match the key",
        ErrorKind::MissingRequiredClaim(_) => "a required claim (exp, iss, aud, sub) is missing",
        _ => "the token is not valid",
    }
    .to_string()
}
