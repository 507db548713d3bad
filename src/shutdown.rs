//! The operator's request to stop: SIGINT (Ctrl-C) or SIGTERM.

use std::future::Future;

/// Starts listening for SIGINT and SIGTERM at once (inside a tokio runtime's context) and
/// returns what resolves (to the signal's number) when one arrives. Listening before the host is built matters: a
/// signal that arrived while the host started its MCP servers used to kill the process
/// outright (the default action), leaving the servers to die on their own some time later.
#[cfg_attr(not(any(feature = "cli", feature = "mcp-client")), allow(dead_code))]
pub(crate) fn listen() -> impl Future<Output = i32> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let interrupt = signal(SignalKind::interrupt());
        let terminate = signal(SignalKind::terminate());
        async move {
            match (interrupt, terminate) {
                (Ok(mut interrupt), Ok(mut terminate)) => {
                    tokio::select! {
                        _ = interrupt.recv() => libc::SIGINT,
                        _ = terminate.recv() => libc::SIGTERM,
                    }
                }
                (interrupt, terminate) => {
                    if let Err(e) = &terminate {
                        tracing::warn!("cannot listen for SIGTERM: {e}");
                    }
                    if let Err(e) = &interrupt {
                        tracing::warn!("cannot listen for SIGINT: {e}");
                    }
                    match (interrupt, terminate) {
                        (Ok(mut interrupt), Err(_)) => {
                            interrupt.recv().await;
                            libc::SIGINT
                        }
                        (Err(_), Ok(mut terminate)) => {
                            terminate.recv().await;
                            libc::SIGTERM
                        }
                        _ => std::future::pending().await,
                    }
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async move {
            let _ = tokio::signal::ctrl_c().await;
            2
        }
    }
}
