//! How long a store operation may wait for a lock: until the deadline of the call (or probe)
//! that makes it, or until that call is cancelled, and never longer than [`BUSY_TIMEOUT`].
//! Both waits a store call can meet are bounded here: this process's writer lock (a
//! `store.update` running on another thread) and SQLite's file lock (another process's
//! transaction), whose busy handler reads the bound of the operation running on its thread.

use super::{BUSY_TIMEOUT, StoreError};
use parking_lot::{Mutex, MutexGuard};
use std::cell::RefCell;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Longest single sleep between two tries: a cancelled call stops waiting within it.
const MAX_NAP: Duration = Duration::from_millis(20);

/// The bound of a store operation's waits.
#[derive(Debug, Clone, Default)]
pub(crate) struct Wait {
    /// The deadline of the code making the call (a Lua call or probe), if any.
    deadline: Option<Instant>,
    /// Its cancellation token, if any.
    cancel: Option<CancellationToken>,
}

impl Wait {
    /// Waits bounded by `deadline` and `cancel` (and by [`BUSY_TIMEOUT`]).
    pub(crate) fn new(deadline: Option<Instant>, cancel: Option<CancellationToken>) -> Self {
        Self { deadline, cancel }
    }

    /// Until when an operation starting at `started` may wait.
    pub(super) fn until(&self, started: Instant) -> Instant {
        let cap = started + BUSY_TIMEOUT;
        self.deadline.map_or(cap, |deadline| deadline.min(cap))
    }

    /// The caller's cancellation, if it has one.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(super) fn cancel_token(&self) -> Option<CancellationToken> {
        self.cancel.clone()
    }

    /// True once the caller is out of time: its deadline passed or it was cancelled.
    pub(super) fn out_of_time(&self) -> bool {
        self.cancel.as_ref().is_some_and(|t| t.is_cancelled())
            || self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Why a wait that started at `started` ended without the lock.
    pub(super) fn gave_up(&self, started: Instant) -> StoreError {
        if self.out_of_time() {
            StoreError::OutOfTime
        } else {
            StoreError::Locked {
                waited: started.elapsed(),
            }
        }
    }

    /// Takes `writer`, waiting at most as long as this bound allows.
    pub(super) fn lock<'a>(&self, writer: &'a Mutex<()>) -> Result<MutexGuard<'a, ()>, StoreError> {
        let started = Instant::now();
        let until = self.until(started);
        loop {
            let now = Instant::now();
            if now >= until || self.out_of_time() {
                return Err(self.gave_up(started));
            }
            if let Some(guard) = writer.try_lock_for((until - now).min(MAX_NAP)) {
                return Ok(guard);
            }
        }
    }

    /// Runs `f` (SQLite work on this thread) with this bound for the busy handler.
    pub(super) fn scope<R>(&self, f: impl FnOnce() -> R) -> R {
        let active = Active {
            until: self.until(Instant::now()),
            cancel: self.cancel.clone(),
        };
        let previous = CURRENT.with(|current| current.replace(Some(active)));
        // Put back on unwind too, so a panic cannot leave a stale bound on the thread.
        struct Restore(Option<Active>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                CURRENT.with(|current| *current.borrow_mut() = previous);
            }
        }
        let _restore = Restore(previous);
        f()
    }
}

/// The bound of the operation running on this thread.
struct Active {
    until: Instant,
    cancel: Option<CancellationToken>,
}

thread_local! {
    static CURRENT: RefCell<Option<Active>> = const { RefCell::new(None) };
}

/// SQLite's busy handler for every store connection: `true` (try again, after a short
/// sleep) while the operation running on this thread may still wait. Outside any
/// operation (cannot happen: every use of a connection is scoped) it gives up at once.
pub(super) fn busy_handler(attempt: i32) -> bool {
    let (until, cancel) = match CURRENT.try_with(|current| {
        current
            .borrow()
            .as_ref()
            .map(|active| (active.until, active.cancel.clone()))
    }) {
        Ok(Some(bound)) => bound,
        _ => return false,
    };
    let now = Instant::now();
    if now >= until || cancel.is_some_and(|t| t.is_cancelled()) {
        return false;
    }
    // Short naps first (a writer usually holds the lock for microseconds), then MAX_NAP.
    let nap = Duration::from_millis(1u64 << attempt.clamp(0, 5) as u32).min(MAX_NAP);
    std::thread::sleep(nap.min(until - now));
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_writer_lock_is_waited_for_until_the_deadline_only() {
        let writer = Mutex::new(());
        let _held = writer.lock();
        let wait = Wait::new(Some(Instant::now() + Duration::from_millis(50)), None);
        let started = Instant::now();
        assert!(matches!(wait.lock(&writer), Err(StoreError::OutOfTime)));
        assert!(started.elapsed() < BUSY_TIMEOUT, "{:?}", started.elapsed());
    }

    #[test]
    fn a_cancelled_caller_stops_waiting_for_the_writer_lock() {
        let writer = Mutex::new(());
        let _held = writer.lock();
        let token = CancellationToken::new();
        token.cancel();
        let wait = Wait::new(None, Some(token));
        assert!(matches!(wait.lock(&writer), Err(StoreError::OutOfTime)));
    }

    #[test]
    fn the_busy_handler_gives_up_outside_a_scope_and_past_the_bound() {
        assert!(!busy_handler(0));
        let past = Wait::new(Some(Instant::now()), None);
        assert!(!past.scope(|| busy_handler(0)));
        let later = Wait::new(Some(Instant::now() + Duration::from_secs(60)), None);
        assert!(later.scope(|| busy_handler(0)));
        assert!(!busy_handler(0), "the bound ends with its scope");
    }
}
