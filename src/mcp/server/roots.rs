//! A session's client roots (MCP roots). A client that declares the `roots` capability has
//! its `file://` roots fetched after `initialized` (again on
//! `notifications/roots/list_changed`); they *narrow* what the server allows — the
//! configured `[sandbox] fs_roots`, or the implicit working-directory root — and never
//! widen it ([`ClientRoots`]): `file:///` gives just the allowed roots, a sibling of the
//! project nothing. The same rule holds on both transports; over HTTP a remote client's
//! paths name its own machine, so they usually match nothing here and its calls get no
//! `fs` access — such a deployment's clients should not declare roots.

// Logging and roots are deprecated by SEP-2577 from protocol 2026-07-28 on; the clients of
// today negotiate earlier versions, where they are part of the protocol.
#![allow(deprecated)]

use crate::fs_roots::ClientRoots;
use rmcp::{Peer, RoleServer};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How long a call waits for a client's first roots answer before using the default.
const FIRST_ANSWER_WAIT: Duration = Duration::from_secs(5);

/// Where a session's roots stand.
#[derive(Clone)]
enum State {
    /// The client declared roots; its answer has not arrived yet.
    Pending,
    /// Settled: the client's roots, or `None` for the host's own.
    Ready(Option<Arc<ClientRoots>>),
}

/// The roots of one session.
pub(crate) struct SessionRoots {
    state: watch::Sender<State>,
}

impl Default for SessionRoots {
    fn default() -> Self {
        Self {
            state: watch::Sender::new(State::Ready(None)),
        }
    }
}

impl SessionRoots {
    /// The client declared roots: calls wait (briefly) for its first answer.
    pub(crate) fn expect_client_roots(&self) {
        self.state.send_replace(State::Pending);
    }

    /// True when the client's roots are in use or awaited.
    pub(crate) fn uses_client_roots(&self) -> bool {
        !matches!(&*self.state.borrow(), State::Ready(None))
    }

    /// The roots a call of this session uses (`None`: the host's own).
    pub(crate) async fn current(&self) -> Option<Arc<ClientRoots>> {
        // Settled (every call but those racing the first answer): no subscription, no timer.
        if let State::Ready(roots) = &*self.state.borrow() {
            return roots.clone();
        }
        let mut receiver = self.state.subscribe();
        let settled = tokio::time::timeout(
            FIRST_ANSWER_WAIT,
            receiver.wait_for(|state| matches!(state, State::Ready(_))),
        )
        .await;
        match settled {
            Ok(Ok(state)) => match &*state {
                State::Ready(roots) => roots.clone(),
                State::Pending => None,
            },
            _ => {
                tracing::warn!("the MCP client did not list its roots in time; using the default");
                None
            }
        }
    }

    /// Asks the client for its roots and makes them the session's. (A URI that is not a
    /// local `file://` path contributes nothing: roots only narrow.)
    pub(crate) async fn refresh(&self, peer: &Peer<RoleServer>) {
        let listed = peer.list_roots().await;
        let paths: Vec<PathBuf> = match listed {
            Ok(listed) => listed
                .roots
                .iter()
                .filter_map(|root| match file_path(&root.uri) {
                    Some(path) => Some(path),
                    None => {
                        tracing::warn!("ignoring MCP root {} (not a file:// URI)", root.uri);
                        None
                    }
                })
                .collect(),
            Err(e) => {
                tracing::warn!("cannot list the MCP client's roots: {e}");
                self.state.send_replace(State::Ready(None));
                return;
            }
        };
        // Opened lazily, against the allowed roots of the VM that runs each call.
        self.state
            .send_replace(State::Ready(Some(Arc::new(ClientRoots::new(paths)))));
    }
}

/// The local path of a `file://` URI (percent-escapes decoded), if it is one.
pub(crate) fn file_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    // `file:///p` (empty authority) or `file://localhost/p`.
    let path = match rest.strip_prefix("localhost") {
        Some(path) => path,
        None => rest,
    };
    if !path.starts_with('/') {
        return None;
    }
    let bytes = path.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = path.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            decoded.push(byte);
            i += 3;
            continue;
        }
        decoded.push(bytes[i]);
        i += 1;
    }
    use std::os::unix::ffi::OsStringExt;
    Some(PathBuf::from(std::ffi::OsString::from_vec(decoded)))
}

#[cfg(test)]
mod tests {
    use super::file_path;
    use std::path::PathBuf;

    #[test]
    fn file_uris_become_paths() {
        assert_eq!(
            file_path("file:///tmp/a%20b"),
            Some(PathBuf::from("/tmp/a b"))
        );
        assert_eq!(file_path("file://localhost/x"), Some(PathBuf::from("/x")));
        assert_eq!(file_path("https://x/y"), None);
        assert_eq!(file_path("file://host/share"), None);
    }
}
