//! Connecting: the URL parsed once (its password kept only inside the driver's config), TLS
//! as its `sslmode` asks, and the pool that hands connections out and reconnects by
//! itself after the server went away.
//!
//! TLS: `sslmode=disable` never encrypts; `require` always does, and the server's
//! certificate must chain to a root certificate of the system (rustls with ring, the roots
//! `rustls-native-certs` finds, as `https://` MCP servers use); `prefer` (the driver's
//! default) encrypts when the server offers TLS with a trusted certificate and otherwise
//! goes on unencrypted, as its name promises (a warning says so once; a debug line for a
//! server on this machine).

use super::errors::Server;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::{Client, Config, NoTls};
use tokio_postgres_rustls::MakeRustlsConnect;

/// What `[store]` says about the PostgreSQL backend.
#[derive(Clone)]
pub(crate) struct Settings {
    /// The connection URL (or `key=value` string), with its password: never shown.
    pub url: String,
    /// The schema the tables live in (`[store] pg_schema`).
    pub schema: String,
    /// Most connections open at once (`[store] pool_size`).
    pub pool_size: usize,
    /// Longest wait for a new connection (`[store] connect_timeout_ms`).
    pub connect_timeout: Duration,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("schema", &self.schema)
            .field("pool_size", &self.pool_size)
            .field("connect_timeout", &self.connect_timeout)
            .finish_non_exhaustive()
    }
}

/// Default `[store] pg_schema`.
pub(crate) const DEFAULT_SCHEMA: &str = "toolhost";
/// Default `[store] pool_size`.
pub(crate) const DEFAULT_POOL_SIZE: usize = 8;
/// Default `[store] connect_timeout_ms`.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Checks a `[store] pg_schema` name: a plain lower-case SQL identifier (it is quoted in
/// every statement as well).
pub(crate) fn check_schema(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
    let rest_ok = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if first_ok && rest_ok && name.len() <= 63 && !name.starts_with("pg_") {
        Ok(())
    } else {
        Err(format!(
            "'{name}' is not a schema name toolhost uses: lower-case letters, digits and _, \
             starting with a letter or _, at most 63 bytes, not starting with pg_"
        ))
    }
}

/// The parsed URL and what may be shown of it.
pub(super) struct Target {
    pub config: Config,
    pub server: Server,
}

/// Parses the URL. The error never holds the URL (it holds the password).
pub(super) fn parse(url: &str) -> Result<Target, String> {
    let config: Config = url.parse().map_err(|e: tokio_postgres::Error| {
        // The driver's parse errors name the option, not its value; scrub anyway.
        let text = super::errors::describe(&e);
        format!(
            "the PostgreSQL URL is not valid ({})",
            scrub_url_parts(&text, url)
        )
    })?;
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            match host {
                Host::Tcp(name) => format!("{name}:{port}"),
                Host::Unix(path) => format!("{}:{port}", path.display()),
            }
        })
        .collect();
    if hosts.is_empty() {
        return Err("the PostgreSQL URL names no host".to_string());
    }
    let database = config
        .get_dbname()
        .or(config.get_user())
        .unwrap_or("postgres");
    let secret = config
        .get_password()
        .map(|p| String::from_utf8_lossy(p).into_owned());
    let label = format!("{}/{database}", hosts.join(","));
    Ok(Target {
        server: Server::new(label, secret),
        config,
    })
}

/// `text` without the URL or its password in it.
fn scrub_url_parts(text: &str, url: &str) -> String {
    let mut out = text.replace(url, "<url>");
    if let Ok(parsed) = url.parse::<Config>()
        && let Some(password) = parsed.get_password()
    {
        let password = String::from_utf8_lossy(password);
        if !password.is_empty() {
            out = out.replace(password.as_ref(), "***");
        }
    }
    out
}

/// The pool for `target`, connecting through `tls` (no connection is made until one is
/// needed).
pub(super) fn pool(
    target: &Target,
    settings: &Settings,
    tls: MakeRustlsConnect,
) -> Result<Pool, String> {
    let mut config = target.config.clone();
    config.connect_timeout(settings.connect_timeout);
    config.application_name("toolhost");
    let manager = Manager::from_connect(
        config,
        Connector {
            tls,
            server: target.server.clone(),
            warned: Arc::new(AtomicBool::new(false)),
        },
        ManagerConfig {
            // A connection the server closed is noticed (its task ended) and replaced.
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(settings.pool_size)
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .create_timeout(Some(settings.connect_timeout))
        .recycle_timeout(Some(settings.connect_timeout))
        .build()
        .map_err(|e| format!("cannot make the connection pool: {e}"))
}

/// The TLS connector: rustls with ring, trusting the system's root certificates.
pub(super) fn tls() -> MakeRustlsConnect {
    let mut roots = rustls::RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(found.certs);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = match rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
    {
        Ok(builder) => builder.with_root_certificates(roots).with_no_client_auth(),
        // ring supports the default versions; should that ever change, fall back to the
        // process's default provider.
        Err(_) => rustls::ClientConfig::builder()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth(),
    };
    MakeRustlsConnect::new(config)
}

/// Makes connections: TLS per `sslmode`, `prefer` falling back to an unencrypted connection
/// when the TLS handshake fails (an untrusted certificate).
struct Connector {
    tls: MakeRustlsConnect,
    server: Server,
    /// The fallback was logged (once per store).
    warned: Arc<AtomicBool>,
}

type Connected = (Client, tokio::task::JoinHandle<()>);
type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

impl deadpool_postgres::Connect for Connector {
    fn connect(&self, config: &Config) -> BoxFuture<'_, Result<Connected, tokio_postgres::Error>> {
        let config = config.clone();
        Box::pin(async move {
            match config.connect(self.tls.clone()).await {
                Ok((client, connection)) => Ok((client, drive(connection))),
                Err(error)
                    if config.get_ssl_mode() == SslMode::Prefer
                        && error.to_string().contains("TLS") =>
                {
                    if !self.warned.swap(true, Ordering::Relaxed) {
                        let message = format!(
                            "store: PostgreSQL at {}: the TLS handshake failed ({}); \
                             sslmode=prefer goes on without TLS (sslmode=require refuses)",
                            self.server.label,
                            self.server.scrub(&super::errors::describe(&error))
                        );
                        // On loopback there is no network to protect: a local server's
                        // self-signed certificate (Debian's default) is not news.
                        if loopback(&config) {
                            tracing::debug!("{message}");
                        } else {
                            tracing::warn!("{message}");
                        }
                    }
                    let mut plain = config.clone();
                    plain.ssl_mode(SslMode::Disable);
                    let (client, connection) = plain.connect(NoTls).await?;
                    Ok((client, drive(connection)))
                }
                Err(error) => Err(error),
            }
        })
    }
}

/// True when every host of `config` is this machine.
fn loopback(config: &Config) -> bool {
    config.get_hosts().iter().all(|host| match host {
        Host::Tcp(name) => {
            name == "localhost"
                || name
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
        Host::Unix(_) => true,
    })
}

/// Runs a connection's I/O until it ends (the client is then closed, and the pool replaces
/// it).
fn drive<S, T>(connection: tokio_postgres::Connection<S, T>) -> tokio::task::JoinHandle<()>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        // A dropped connection is noticed by the next call (and its error names the
        // server); nothing to log here.
        let _ = connection.await;
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_label_names_host_port_and_database_only() {
        let target = parse("postgres://app:s3cr3t-pw@db.example:6543/shop?sslmode=disable")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(target.server.label, "db.example:6543/shop");
        assert!(!format!("{:?}", target.server).contains("s3cr3t"));
    }

    #[test]
    fn a_bad_url_error_holds_no_password() {
        let err = parse("postgres://app:s3cr3t-pw@db/shop?sslmode=bogus")
            .err()
            .expect("bad sslmode");
        assert!(err.contains("sslmode"), "{err}");
        assert!(!err.contains("s3cr3t"), "{err}");
    }

    #[test]
    fn schema_names_are_plain_identifiers() {
        assert!(check_schema("toolhost").is_ok());
        assert!(check_schema("_t2").is_ok());
        for bad in ["", "Tool", "a-b", "a\"b", "pg_x", "1a", &"a".repeat(64)] {
            assert!(check_schema(bad).is_err(), "{bad}");
        }
    }
}
