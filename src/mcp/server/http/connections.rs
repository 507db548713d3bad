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
//! - **`[serve] http_threads`** ([`Spread`]): connections are handed in turn to that many
//!   threads, the accepting one included, each driving a single-threaded runtime, and a
//!   connection stays on its thread. With one multi-threaded runtime every request woke
//!   an idle worker or two for nothing (five thread switches per call instead of two and a
//!   half; ≈25 % more server CPU per call, see docs/performance.md), while a
//!   connection's requests come one after another and need no second thread; Lua runs on
//!   the VMs' threads either way.

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio_util::sync::{CancellationToken, DropGuard};
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

/// The threads that serve connections besides the accepting one, each driving a
/// single-threaded runtime until the `Spread` is dropped.
pub(crate) struct Spread {
    runtimes: Vec<tokio::runtime::Handle>,
    turn: AtomicUsize,
    /// Ends every thread's runtime when the spread is dropped: its tasks are dropped (the
    /// connections on it close), its blocking tasks get half a second.
    _stop: DropGuard,
}

/// Blocking threads (listings, probes, the task store) the runtimes of a spread share
/// between them, as many as one runtime has by default (the accepting runtime keeps its
/// own): a runtime each would multiply the bound by `http_threads`.
const BLOCKING_THREADS: usize = 512;

impl Spread {
    /// `threads` threads in all (at least the accepting one): starts `threads - 1`. Each
    /// builds its runtime itself and hands back its handle: a runtime must not be dropped
    /// on an async thread, which is where a failed start would drop one built here.
    pub(crate) fn start(threads: usize) -> std::io::Result<Self> {
        let stop = CancellationToken::new();
        // Threads started before a failure end with the guard.
        let guard = stop.clone().drop_guard();
        let blocking = (BLOCKING_THREADS / threads.max(1)).max(8);
        let runtimes = (1..threads.max(1))
            .map(|index| {
                let failed = |e: std::io::Error| {
                    std::io::Error::new(
                        e.kind(),
                        format!(
                            "cannot start HTTP thread {index} of {threads} \
                             ([serve] http_threads): {e}"
                        ),
                    )
                };
                let (handle_sender, handle) = std::sync::mpsc::channel();
                let stop = stop.clone();
                std::thread::Builder::new()
                    .name(format!("toolhost-http-{index}"))
                    .spawn(move || {
                        let runtime = tokio::runtime::Builder::new_current_thread()
                            .enable_all()
                            .max_blocking_threads(blocking)
                            .build();
                        let runtime = match runtime {
                            Ok(runtime) => runtime,
                            Err(e) => {
                                let _ = handle_sender.send(Err(e));
                                return;
                            }
                        };
                        let _ = handle_sender.send(Ok(runtime.handle().clone()));
                        runtime.block_on(stop.cancelled());
                        runtime.shutdown_timeout(Duration::from_millis(500));
                    })
                    .map_err(failed)?;
                // The thread answers at once (its runtime built or not).
                handle
                    .recv()
                    .map_err(|_| failed(std::io::Error::other("the thread ended")))?
                    .map_err(failed)
            })
            .collect::<std::io::Result<_>>()?;
        Ok(Self {
            runtimes,
            turn: AtomicUsize::new(0),
            _stop: guard,
        })
    }

    /// The runtime of the next connection: `None` is the accepting one's.
    fn next(&self) -> Option<&tokio::runtime::Handle> {
        let turn = self.turn.fetch_add(1, Ordering::Relaxed) % (self.runtimes.len() + 1);
        turn.checked_sub(1).map(|index| &self.runtimes[index])
    }
}

/// Accepts connections on `listener` and serves `app` on each, on the threads of `spread`
/// in turn, until `stop` is cancelled; then stops accepting, asks every connection to
/// close once its running request is answered, and returns when all have closed.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    spread: Arc<Spread>,
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
        match spread.next() {
            None => {
                connections.spawn(async move {
                    serve_connection(stream, app, limits.header_timeout, stop, pressure).await;
                    drop(slot);
                });
            }
            Some(runtime) => {
                // Moved to the other runtime's reactor: its thread alone polls it.
                let stream = match stream.into_std() {
                    Ok(stream) => stream,
                    Err(e) => {
                        tracing::debug!("cannot hand a connection to another thread: {e}");
                        continue;
                    }
                };
                connections.spawn_on(
                    async move {
                        match tokio::net::TcpStream::from_std(stream) {
                            Ok(stream) => {
                                serve_connection(stream, app, limits.header_timeout, stop, pressure)
                                    .await
                            }
                            Err(e) => tracing::debug!("cannot serve a handed-on connection: {e}"),
                        }
                        drop(slot);
                    },
                    runtime,
                );
            }
        }
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
