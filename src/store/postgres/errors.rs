//! What a failed PostgreSQL operation becomes: a lock or statement timeout is the call's
//! wait ending (`Locked` / `OutOfTime`, as with SQLite); anything else is
//! [`StoreError::Postgres`] naming the server (`host:port/database`) — never the URL or the
//! password, which are scrubbed from every message that reaches an error or a log line.

use super::super::StoreError;

/// SQLSTATE `lock_not_available`: `lock_timeout` ended a wait for a row lock.
const LOCK_NOT_AVAILABLE: &str = "55P03";
/// SQLSTATE `query_canceled`: `statement_timeout` (or a cancel request) ended a statement.
const QUERY_CANCELED: &str = "57014";

/// Why an operation on the backend's runtime failed, before the caller's thread turns it
/// into a [`StoreError`] (only the caller knows whether its deadline passed or it was
/// cancelled, which decides between `OutOfTime` and `Locked`).
#[derive(Debug)]
pub(super) enum Failure {
    /// The wait ended: a lock or statement timeout, or the client-side bound.
    TimedOut,
    /// Anything else, ready for the caller.
    Store(StoreError),
    /// No connection came before the call's time ran out: the call's deadline (or its
    /// cancellation) when that is what ended it, else this error.
    NoConnection(StoreError),
}

/// Names the server and scrubs the password out of messages.
#[derive(Clone)]
pub(super) struct Server {
    /// `host:port/database` (several hosts are joined by commas).
    pub label: String,
    /// The password, to scrub from messages (never shown).
    secret: Option<String>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.label)
    }
}

impl Server {
    pub(super) fn new(label: String, secret: Option<String>) -> Self {
        Self {
            label,
            secret: secret.filter(|s| !s.is_empty()),
        }
    }

    /// `message` with the password replaced by `***` (a driver message should never hold
    /// it; this is the last line of defence).
    pub(super) fn scrub(&self, message: &str) -> String {
        match &self.secret {
            Some(secret) => message.replace(secret.as_str(), "***"),
            None => message.to_string(),
        }
    }

    /// The store error for `message` about this server.
    pub(super) fn error(&self, message: impl AsRef<str>) -> StoreError {
        StoreError::Postgres {
            server: self.label.clone(),
            message: self.scrub(message.as_ref()),
        }
    }

    /// The failure for a driver error.
    pub(super) fn failed(&self, error: &tokio_postgres::Error) -> Failure {
        if let Some(db) = error.as_db_error() {
            let code = db.code().code();
            if code == LOCK_NOT_AVAILABLE || code == QUERY_CANCELED {
                return Failure::TimedOut;
            }
            return Failure::Store(self.error(format!("{} (SQLSTATE {code})", db.message())));
        }
        Failure::Store(self.error(describe(error)))
    }

    /// The failure for a pool error (no connection could be made or lent).
    pub(super) fn pool_failed(&self, error: &deadpool_postgres::PoolError) -> Failure {
        use deadpool_postgres::PoolError;
        let message = match error {
            PoolError::Backend(e) => format!("cannot connect: {}", describe(e)),
            PoolError::Timeout(_) => "cannot connect: no answer within [store] \
                                      connect_timeout_ms"
                .to_string(),
            other => format!("cannot connect: {}", describe(other)),
        };
        Failure::Store(self.error(message))
    }
}

/// An error and its causes, `: `-joined (the driver's "error connecting to server" hides the
/// useful part, "Connection refused", in its source).
pub(super) fn describe(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_is_scrubbed_from_messages() {
        let server = Server::new("db:5432/app".into(), Some("hunter2-secret".into()));
        let StoreError::Postgres { server, message } =
            server.error("password hunter2-secret rejected")
        else {
            panic!("not a PostgreSQL error");
        };
        assert_eq!(server, "db:5432/app");
        assert_eq!(message, "password *** rejected");
    }
}
