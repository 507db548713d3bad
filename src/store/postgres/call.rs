//! Running an operation on the backend's own runtime and handing its result back.
//!
//! Store calls come from threads that may block (VM threads, embedder calls moved off the
//! async workers) but may sit inside some runtime, so they never `block_on`: the work is
//! spawned on a small runtime the backend owns (two worker threads) and the caller waits
//! on a channel, for as long as its [`Wait`] allows plus a short grace (the client-side
//! bound). On the runtime the work is bounded too (by the same instant, and by the call's
//! cancellation): when it is dropped mid-query its connection is taken out of the pool
//! and the query is cancelled on the server ([`Checkout`]).

use super::super::StoreError;
use super::super::wait::Wait;
use super::Db;
use super::errors::Failure;
use std::future::Future;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
use std::time::{Duration, Instant};

/// How much later than the server-side timeouts the runtime side gives up: the server's
/// own timeout (a precise error) normally comes first.
pub(super) const SERVER_FIRST: Duration = Duration::from_millis(250);
/// How much later still the caller stops waiting for the runtime (the last bound).
const CALLER_GRACE: Duration = Duration::from_millis(750);

/// The backend's runtime (shut down in the background when the store is dropped, which may
/// happen inside another runtime).
pub(super) struct Runner {
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
    /// The server's label, for the error of a runtime that stopped.
    server: String,
}

impl Runner {
    pub(super) fn new(server: String) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("toolhost-postgres")
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        Ok(Self {
            runtime: Some(runtime),
            handle,
            server,
        })
    }

    pub(super) fn handle(&self) -> &tokio::runtime::Handle {
        &self.handle
    }

    /// Starts `work` on the runtime, bounded by `until` (plus [`SERVER_FIRST`]) and by the
    /// wait's cancellation.
    pub(super) fn start<T: Send + 'static>(
        &self,
        wait: &Wait,
        until: Instant,
        work: impl Future<Output = Result<T, Failure>> + Send + 'static,
    ) -> Pending<T> {
        let (sender, receiver) = sync_channel(1);
        let cancel = wait.cancel_token();
        let last = tokio::time::Instant::from_std(until + SERVER_FIRST);
        self.handle.spawn(async move {
            let bounded = tokio::time::timeout_at(last, work);
            let result = match cancel {
                Some(token) => tokio::select! {
                    result = bounded => result.unwrap_or(Err(Failure::TimedOut)),
                    () = token.cancelled() => Err(Failure::TimedOut),
                },
                None => bounded.await.unwrap_or(Err(Failure::TimedOut)),
            };
            let _ = sender.try_send(result);
        });
        Pending {
            receiver,
            until: until + SERVER_FIRST + CALLER_GRACE,
            server: self.server.clone(),
        }
    }

    /// Runs `work` and waits for its result (see [`Runner::start`]).
    pub(super) fn run<T: Send + 'static>(
        &self,
        wait: &Wait,
        until: Instant,
        work: impl Future<Output = Result<T, Failure>> + Send + 'static,
    ) -> Result<T, StoreError> {
        let started = Instant::now();
        self.start(wait, until, work).wait(wait, started)
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// An operation running on the runtime.
pub(super) struct Pending<T> {
    receiver: Receiver<Result<T, Failure>>,
    /// When the caller stops waiting, whatever the runtime does.
    until: Instant,
    server: String,
}

impl<T> Pending<T> {
    /// Its result, or the wait's end (`OutOfTime` / `Locked`) once the bound passed.
    pub(super) fn wait(self, wait: &Wait, started: Instant) -> Result<T, StoreError> {
        let left = self.until.saturating_duration_since(Instant::now());
        match self.receiver.recv_timeout(left) {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(Failure::Store(error))) => Err(error),
            Ok(Err(Failure::NoConnection(error))) => match wait.out_of_time() {
                true => Err(StoreError::OutOfTime),
                false => Err(error),
            },
            Ok(Err(Failure::TimedOut)) | Err(RecvTimeoutError::Timeout) => {
                Err(wait.gave_up(started))
            }
            Err(RecvTimeoutError::Disconnected) => Err(StoreError::Postgres {
                server: self.server,
                message: "the store's runtime stopped (the host is shutting down)".to_string(),
            }),
        }
    }
}

/// A pooled connection in use. Dropped before [`Checkout::finish`] (the operation was
/// abandoned mid-way: out of time, cancelled), the connection is taken out of the pool
/// (never lent again in an unknown state) and its running query is cancelled on the
/// server, so a lock wait or a long statement there ends too.
pub(super) struct Checkout {
    object: Option<deadpool_postgres::Object>,
    db: Arc<Db>,
}

impl Checkout {
    /// A connection from the pool, or a new one (bounded by `until`).
    pub(super) async fn get(db: &Arc<Db>, until: Instant) -> Result<Self, Failure> {
        let deadline = tokio::time::Instant::from_std(until);
        match tokio::time::timeout_at(deadline, db.pool.get()).await {
            Ok(Ok(object)) => Ok(Self {
                object: Some(object),
                db: db.clone(),
            }),
            Ok(Err(error)) => Err(db.server.pool_failed(&error)),
            Err(_) => Err(Failure::NoConnection(db.server.error(
                "cannot connect: no connection within the call's time (the server does not \
                 answer, or every pooled connection is busy)",
            ))),
        }
    }

    /// The connection.
    pub(super) fn client(&mut self) -> &mut deadpool_postgres::Object {
        self.object
            .as_mut()
            .expect("held until finished or dropped")
    }

    /// The operation ran to its end (successfully or with the server's error): the
    /// connection goes back to the pool (a closed one is replaced there).
    pub(super) fn finish(mut self) {
        drop(self.object.take());
    }
}

impl Drop for Checkout {
    fn drop(&mut self) {
        let Some(object) = self.object.take() else {
            return;
        };
        let cancel = object.cancel_token();
        let client = deadpool_postgres::Object::take(object);
        let tls = self.db.tls.clone();
        self.db.runner_handle.spawn(async move {
            // Best effort: the server may be gone already.
            let _ = cancel.cancel_query(tls).await;
            drop(client);
        });
    }
}
