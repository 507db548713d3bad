//! The sealed state of a multi-round call (2026-07-28 `requestState`): what the server
//! needs to continue a call in a later round, kept by the client, never by the server.
//!
//! It carries the tool's name, a SHA-256 digest of the call's arguments, the answers
//! recorded so far (by request key), the requests still waiting for an answer and the time
//! it was sealed, sealed with HMAC-SHA256 by rmcp's `RequestStateCodec` under the key in
//! `[serve] state_key_env` (else a random key per process: then only that process can
//! continue the call). Opening refuses, each with its own message: a state that does not
//! verify (tampered, or sealed with another key), one older than `[serve]
//! input_request_ttl_ms`, and one sealed for another tool or other arguments. The state is
//! signed, not encrypted: the client can read the answers it gave itself.

use crate::{InputAnswer, InputKind};
use rmcp::model::{RequestStateCodec, RequestStateError, SealOptions};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Default `[serve] input_request_ttl_ms`: ten minutes for a human to answer.
pub(crate) const DEFAULT_TTL_MS: u64 = 600_000;

/// Bound into every seal, so a toolhost state is never confused with another use of the
/// same key.
const ASSOCIATED: &[u8] = b"toolhost/tools-call/request-state/v1";

/// The state of one multi-round call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RoundState {
    /// The tool called.
    pub tool: String,
    /// SHA-256 of the call's arguments (canonical JSON), hex.
    pub args: String,
    /// The answers so far, by request key.
    pub answers: BTreeMap<String, InputAnswer>,
    /// The requests of the last round, by key: what their answers must be.
    pub pending: BTreeMap<String, InputKind>,
    /// When it was sealed (Unix milliseconds).
    pub sealed_at_ms: u64,
}

/// Why a `requestState` is refused (the client reads the message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum StateRefused {
    /// The state does not verify: changed, forged, or sealed with another key.
    #[error(
        "requestState does not verify (changed, or sealed by a server with another key; \
         servers sharing calls need the same [serve] state_key_env); call the tool again \
         without it"
    )]
    Tampered,
    /// Older than the TTL.
    #[error(
        "requestState is stale: sealed {age_ms} ms ago, longer than [serve] \
         input_request_ttl_ms ({ttl_ms} ms); call the tool again without it"
    )]
    Stale {
        /// Its age.
        age_ms: u64,
        /// The TTL.
        ttl_ms: u64,
    },
    /// Sealed for another tool.
    #[error("requestState belongs to a call of tool '{sealed}', not '{called}'")]
    OtherTool {
        /// The tool it was sealed for.
        sealed: String,
        /// The tool called now.
        called: String,
    },
    /// Sealed for other arguments.
    #[error(
        "requestState belongs to a call of '{0}' with other arguments (a retry must repeat \
         the arguments unchanged)"
    )]
    OtherArguments(String),
}

/// Seals and opens round states.
pub(crate) struct Sealer {
    codec: RequestStateCodec,
    ttl: Duration,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealer").field("ttl", &self.ttl).finish()
    }
}

impl Sealer {
    /// A sealer with `key` (at least 32 bytes) and a TTL; `Err` names the problem.
    pub(crate) fn new(key: &[u8], ttl: Duration) -> Result<Self, String> {
        let codec = RequestStateCodec::try_new(key.to_vec()).map_err(|e| e.to_string())?;
        Ok(Self { codec, ttl })
    }

    /// A sealer with a random key of this process.
    pub(crate) fn random(ttl: Duration) -> std::io::Result<Self> {
        use std::io::Read;
        let mut key = [0u8; 32];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut key)?;
        Ok(Self {
            codec: RequestStateCodec::new_unchecked(key.to_vec()),
            ttl,
        })
    }

    /// The sealer `[serve]` asks for: the key in the variable `state_key_env` names (at
    /// least 32 bytes), else a random one. `Err` names the variable and what is wrong.
    pub(crate) fn from_config(
        state_key_env: Option<&str>,
        ttl_ms: Option<u64>,
    ) -> Result<Self, String> {
        let ttl = Duration::from_millis(ttl_ms.unwrap_or(DEFAULT_TTL_MS));
        match state_key_env {
            Some(name) => {
                let key = std::env::var(name).unwrap_or_default();
                if key.is_empty() {
                    return Err(format!(
                        "[serve] state_key_env names ${name}, which is not set or empty"
                    ));
                }
                Self::new(key.as_bytes(), ttl).map_err(|e| {
                    format!("[serve] state_key_env: the key in ${name} is unusable: {e}")
                })
            }
            None => Self::random(ttl)
                .map_err(|e| format!("cannot make a random request-state key: {e}")),
        }
    }

    /// `state`, sealed.
    pub(crate) fn seal(&self, state: &RoundState) -> String {
        let payload = serde_json::to_vec(state).unwrap_or_default();
        self.codec
            .seal_with(&payload, &SealOptions::new().associated_data(ASSOCIATED))
    }

    /// The state `sealed` holds for a call of `tool` with `args`, or why it is refused.
    pub(crate) fn open(
        &self,
        sealed: &str,
        tool: &str,
        args: &Value,
    ) -> Result<RoundState, StateRefused> {
        self.open_at(sealed, tool, args, now_ms())
    }

    fn open_at(
        &self,
        sealed: &str,
        tool: &str,
        args: &Value,
        now: u64,
    ) -> Result<RoundState, StateRefused> {
        let payload =
            self.codec
                .open_with(sealed, ASSOCIATED)
                .map_err(|e: RequestStateError| {
                    tracing::debug!("requestState refused: {e}");
                    StateRefused::Tampered
                })?;
        // Verified: only this server's key could have sealed it, so it parses; if it does
        // not (another toolhost version), it is refused like a forged one.
        let state: RoundState =
            serde_json::from_slice(&payload).map_err(|_| StateRefused::Tampered)?;
        let age_ms = now.saturating_sub(state.sealed_at_ms);
        let ttl_ms = self.ttl.as_millis() as u64;
        if age_ms > ttl_ms {
            return Err(StateRefused::Stale { age_ms, ttl_ms });
        }
        if state.tool != tool {
            return Err(StateRefused::OtherTool {
                sealed: state.tool,
                called: tool.to_string(),
            });
        }
        if state.args != args_digest(args) {
            return Err(StateRefused::OtherArguments(tool.to_string()));
        }
        Ok(state)
    }
}

/// SHA-256 of `args` as canonical JSON text (object keys sorted at every level, whatever
/// order the client wrote them in), hex.
pub(crate) fn args_digest(args: &Value) -> String {
    fn canonical(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, key) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(key.clone()).to_string());
                    out.push(':');
                    canonical(&map[key], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    canonical(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut text = String::new();
    canonical(args, &mut text);
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Now, in Unix milliseconds.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn sealer() -> Sealer {
        Sealer::new(KEY, Duration::from_millis(1_000)).unwrap()
    }

    fn state(at: u64) -> RoundState {
        RoundState {
            tool: "greet".into(),
            args: args_digest(&json!({"x": 1})),
            answers: BTreeMap::from([("q1".to_string(), InputAnswer::Decline)]),
            pending: BTreeMap::new(),
            sealed_at_ms: at,
        }
    }

    #[test]
    fn a_sealed_state_opens_for_the_same_call() {
        let sealed = sealer().seal(&state(5_000));
        let opened = sealer().open_at(&sealed, "greet", &json!({"x": 1}), 5_500);
        assert_eq!(opened, Ok(state(5_000)));
    }

    #[test]
    fn a_changed_state_is_refused_as_tampered() {
        let sealed = sealer().seal(&state(5_000));
        let mut bytes = sealed.into_bytes();
        let middle = bytes.len() / 2;
        bytes[middle] = if bytes[middle] == b'A' { b'B' } else { b'A' };
        let changed = String::from_utf8(bytes).unwrap();
        let opened = sealer().open_at(&changed, "greet", &json!({"x": 1}), 5_500);
        assert_eq!(opened, Err(StateRefused::Tampered));
        let garbage = sealer().open_at("not a state", "greet", &json!({"x": 1}), 5_500);
        assert_eq!(garbage, Err(StateRefused::Tampered));
    }

    #[test]
    fn a_state_sealed_with_another_key_is_refused_as_tampered() {
        let other = Sealer::new(
            b"another key of at least 32 bytes!!",
            Duration::from_secs(1),
        );
        let sealed = other.unwrap().seal(&state(5_000));
        let opened = sealer().open_at(&sealed, "greet", &json!({"x": 1}), 5_500);
        assert_eq!(opened, Err(StateRefused::Tampered));
    }

    #[test]
    fn an_old_state_is_refused_as_stale() {
        let sealed = sealer().seal(&state(5_000));
        let opened = sealer().open_at(&sealed, "greet", &json!({"x": 1}), 6_001);
        assert_eq!(
            opened,
            Err(StateRefused::Stale {
                age_ms: 1_001,
                ttl_ms: 1_000
            })
        );
    }

    #[test]
    fn a_state_for_another_tool_or_other_arguments_is_refused() {
        let sealed = sealer().seal(&state(5_000));
        let other_tool = sealer().open_at(&sealed, "delete", &json!({"x": 1}), 5_500);
        assert!(matches!(other_tool, Err(StateRefused::OtherTool { .. })));
        let other_args = sealer().open_at(&sealed, "greet", &json!({"x": 2}), 5_500);
        assert_eq!(
            other_args,
            Err(StateRefused::OtherArguments("greet".into()))
        );
    }

    #[test]
    fn the_arguments_digest_ignores_key_order() {
        let a: Value =
            serde_json::from_str(r#"{"b": 1, "a": {"y": 2, "x": [1, {"q": 1, "p": 2}]}}"#).unwrap();
        let b: Value =
            serde_json::from_str(r#"{"a": {"x": [1, {"p": 2, "q": 1}], "y": 2}, "b": 1}"#).unwrap();
        assert_eq!(args_digest(&a), args_digest(&b));
        assert_ne!(args_digest(&a), args_digest(&json!({"b": 2})));
    }

    #[test]
    fn a_short_key_is_refused() {
        assert!(Sealer::new(b"short", Duration::from_secs(1)).is_err());
    }
}
