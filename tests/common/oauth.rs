//! An OAuth issuer for tests: P-256 signing keys made here, tokens signed with them, and a
//! JWKS served by a tiny HTTP server on loopback (which counts its fetches and can change
//! the keys it serves, for key rotation).

#![allow(dead_code)]

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::pkcs8::EncodePrivateKey;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

pub const ISSUER: &str = "https://idp.test";
pub const AUDIENCE: &str = "https://mcp.test/mcp";
/// Where the server says its metadata is (derived from [`AUDIENCE`]).
pub const METADATA_URL: &str = "https://mcp.test/.well-known/oauth-protected-resource/mcp";

/// A signing key and its id.
pub struct Key {
    pub kid: String,
    encoding: EncodingKey,
    /// The public key as a JWK (with its `kid`).
    pub jwk: Jwk,
    /// The public key's SEC1 bytes (what an attacker would use as an HMAC secret).
    pub public_bytes: Vec<u8>,
}

impl Key {
    /// A P-256 key from `seed` (any byte but 0; distinct seeds, distinct keys).
    pub fn new(kid: &str, seed: u8) -> Self {
        let secret = p256::SecretKey::from_slice(&[seed; 32]).expect("a valid scalar");
        let der = secret.to_pkcs8_der().expect("PKCS#8");
        let encoding = EncodingKey::from_ec_der(der.as_bytes());
        let mut jwk = Jwk::from_encoding_key(&encoding, Algorithm::ES256).expect("a JWK");
        jwk.common.key_id = Some(kid.to_string());
        let public_bytes = secret.public_key().to_sec1_bytes().to_vec();
        Self {
            kid: kid.to_string(),
            encoding,
            jwk,
            public_bytes,
        }
    }

    /// A token with `claims`, signed with this key (ES256, this `kid`).
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("signed")
    }
}

/// `bytes` in unpadded base64url (for hand-made tokens a signing library refuses to make).
pub fn b64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

/// An unsigned token (`alg: none`) with `claims`.
pub fn unsigned(claims: &Value) -> String {
    let header = json!({"alg": "none", "typ": "JWT"}).to_string();
    format!(
        "{}.{}.",
        b64url(header.as_bytes()),
        b64url(claims.to_string().as_bytes())
    )
}

/// Seconds since the epoch.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs() as i64
}

/// Good claims for `sub`: this issuer, this audience, valid for an hour.
pub fn claims(sub: &str) -> Value {
    json!({ "iss": ISSUER, "aud": AUDIENCE, "sub": sub, "iat": now(), "exp": now() + 3600 })
}

/// A JWKS document of `keys`.
pub fn jwks(keys: &[&Key]) -> String {
    serde_json::to_string(&JwkSet {
        keys: keys.iter().map(|k| k.jwk.clone()).collect(),
    })
    .expect("JSON")
}

/// A JWKS served over HTTP on loopback until the test ends.
pub struct JwksServer {
    pub url: String,
    document: Arc<Mutex<String>>,
    fetches: Arc<AtomicUsize>,
}

impl JwksServer {
    /// Serves `document` at `http://127.0.0.1:PORT/jwks`.
    pub fn start(document: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/jwks", listener.local_addr().unwrap());
        let document = Arc::new(Mutex::new(document));
        let fetches = Arc::new(AtomicUsize::new(0));
        let (served, counted) = (document.clone(), fetches.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { break };
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                    line.clear();
                }
                counted.fetch_add(1, Ordering::SeqCst);
                let body = served.lock().unwrap().clone();
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Self {
            url,
            document,
            fetches,
        }
    }

    /// Serves `document` from now on.
    pub fn serve(&self, document: String) {
        *self.document.lock().unwrap() = document;
    }

    /// How many times the JWKS was fetched.
    pub fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}
