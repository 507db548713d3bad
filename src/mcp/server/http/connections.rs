//! The HTTP connections of `serve --http`: accepted here and driven by hyper's HTTP/1
//! server directly, because `axum::serve` sets neither a header timeout nor a bound on
//! connections, and left Nagle's algorithm on.
//!
//! - **`TCP_NODELAY`** on every accepted socket. A call's answer over a session is an SSE
//!   stream written in several small pieces (headers with the priming event, then the
//!   message, then the end of the chunked body); with Nagle's algorithm the second piece
//!   waited for the client's delayed ACK of the first — a constant ~40 ms per call.
//! - **`[serve] header_timeout_ms`**: a connection that does not finish a request's headers
//!   in time is closed. Hyper starts that timer whenever it waits for a request, so it is
//!   also the idle timeout of a keep-alive connection between requests.
//! - **`[serve] max_connections`**: at most that many connections are served at once. Past
//!   it the server stops accepting: new clients wait in the kernel's accept queue (they are
//!   not refused) until a connection closes — and one that never finishes its headers
//!   closes after `header_timeout_ms`, so a flood of such connections delays new clients
//!   by about that long instead of locking them out, while the cap bounds memory and file
//!   descriptors.

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Default `[serve] max_connections`, when the process may open that many files.
const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// File descriptors kept for everything but connections (tool files, the store, pipes).
#[cfg(unix)]
const RESERVED_FILES: libc::rlim_t = 64;

/// Default `[serve] max_connections`: 1,024, or fewer when the open-files limit is lower —
/// past that limit `accept` fails and nobody is served; under the cap, a slot frees when a
/// connection closes.
#[cfg(unix)]
pub(crate) fn default_max_connections() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct it is given.
    let read = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
    if !read || limit.rlim_cur == libc::RLIM_INFINITY {
        return DEFAULT_MAX_CONNECTIONS;
    }
    let current = limit.rlim_cur;
    let room = current.saturating_sub(RESERVED_FILES).max(current / 2);
    usize::try_from(room)
        .unwrap_or(usize::MAX)
        .clamp(1, DEFAULT_MAX_CONNECTIONS)
}

/// Default `[serve] max_connections` (no open-files limit to read).
#[cfg(not(unix))]
pub(crate) fn default_max_connections() -> usize {
    DEFAULT_MAX_CONNECTIONS
}
/// Default `[serve] header_timeout_ms`.
pub(crate) const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// The bounds on connections.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// Connections served at once.
    pub(crate) max_connections: usize,
    /// How long a request's headers may take (and a keep-alive connection may idle).
    pub(crate) header_timeout: Duration,
}

/// Accepts connections on `listener` and serves `app` on each until `stop` is cancelled;
/// then stops accepting, asks every connection to close once its running request is
/// answered, and returns when all have closed.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    stop: CancellationToken,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    // At the cap, every open connection is asked to close once its running request is
    // answered (a new generation is announced): clients that keep cheap keep-alive requests
    // going (a `/healthz` every few seconds) cannot hold every slot while new ones wait.
    let pressure = Arc::new(watch::Sender::new(0u64));
    let connections = TaskTracker::new();
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => stream,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        // Over the cap this one connection waits for a slot; the others stay in the
        // kernel's queue meanwhile.
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                pressure.send_modify(|generation| *generation += 1);
                tokio::select! {
                    slot = slots.clone().acquire_owned() => match slot {
                        Ok(slot) => slot,
                        Err(_) => break, // never closed
                    },
                    () = stop.cancelled() => break,
                }
            }
        };
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY on a connection: {e}");
        }
        let app = app.clone();
        let stop = stop.clone();
        let pressure = pressure.subscribe();
        connections.spawn(async move {
            serve_connection(stream, app, limits.header_timeout, stop, pressure).await;
            drop(slot);
        });
    }
    drop(listener);
    connections.close();
    connections.wait().await;
    Ok(())
}

/// Serves one connection until it closes; on `stop`, lets its running request finish.
async fn serve_connection(
    stream: tokio::net::TcpStream,
    app: Router,
    header_timeout: Duration,
    stop: CancellationToken,
    mut pressure: watch::Receiver<u64>,
) {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    let connection = builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app));
    tokio::pin!(connection);
    let served = tokio::select! {
        served = connection.as_mut() => served,
        () = stop.cancelled() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
        Ok(()) = pressure.changed() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(e) = served {
        // A client that went away or never finished its headers: nothing to tell anyone.
        tracing::debug!("HTTP connection ended: {e}");
    }
}

/// An `accept` that failed: a connection reset before it was accepted is nothing; running
/// out of file descriptors (or another resource) is logged and waited out briefly, so the
/// loop does not spin while connections close.
async fn accept_failed(e: std::io::Error) {
    use std::io::ErrorKind::*;
    if matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | ConnectionRefused | Interrupted
    ) {
        return;
    }
    tracing::warn!("cannot accept a connection: {e}");
    tokio::time::sleep(Duration::from_millis(100)).await;
}
