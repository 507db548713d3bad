//! A deadline timer that needs nothing from the async runtime: one background thread wakes
//! the futures whose deadlines passed. Deadlines therefore hold whether or not the embedding
//! program's tokio runtime has timers enabled (a runtime without them would otherwise panic).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc;
use std::sync::{LazyLock, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

struct Entry {
    at: Instant,
    waker: Waker,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.at.cmp(&other.at)
    }
}

static TIMER: LazyLock<Option<Mutex<mpsc::Sender<Entry>>>> = LazyLock::new(|| {
    let (sender, receiver) = mpsc::channel::<Entry>();
    let spawned = std::thread::Builder::new()
        .name("toolhost-timer".into())
        .spawn(move || {
            let mut pending: BinaryHeap<Reverse<Entry>> = BinaryHeap::new();
            loop {
                let now = Instant::now();
                while pending.peek().is_some_and(|Reverse(e)| e.at <= now) {
                    if let Some(Reverse(entry)) = pending.pop() {
                        entry.waker.wake();
                    }
                }
                let next = match pending.peek() {
                    Some(Reverse(entry)) => receiver.recv_timeout(entry.at - now),
                    None => receiver
                        .recv()
                        .map_err(|_| mpsc::RecvTimeoutError::Disconnected),
                };
                match next {
                    Ok(entry) => pending.push(Reverse(entry)),
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                }
            }
        });
    spawned.ok().map(|_| Mutex::new(sender))
});

/// Wakes `waker` at `at` (or soon after).
pub(crate) fn wake_at(at: Instant, waker: Waker) {
    if let Some(sender) = TIMER.as_ref()
        && let Ok(sender) = sender.lock()
    {
        let _ = sender.send(Entry { at, waker });
    }
}

/// Completes at `at`.
pub(crate) struct SleepUntil {
    at: Instant,
}

/// A future completing at `at`, without the async runtime's timers.
pub(crate) fn sleep_until(at: Instant) -> SleepUntil {
    SleepUntil { at }
}

impl Future for SleepUntil {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.at {
            return Poll::Ready(());
        }
        wake_at(self.at, cx.waker().clone());
        Poll::Pending
    }
}

/// Runs `future` until `at`; `None` when the deadline came first (the future is dropped).
pub(crate) async fn until<F: Future>(at: Instant, future: F) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    let mut sleep = sleep_until(at);
    std::future::poll_fn(move |cx| {
        if let Poll::Ready(output) = future.as_mut().poll(cx) {
            return Poll::Ready(Some(output));
        }
        match Pin::new(&mut sleep).poll(cx) {
            Poll::Ready(()) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}
