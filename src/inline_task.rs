//! A task that is polled on the thread that wakes it, when that thread allows it.
//!
//! Why: an MCP call over stdio crossed threads three times — the runtime's thread hands it
//! to the VM's thread, the VM's thread hands the answer back (waking the runtime's thread,
//! which on two cores also preempted the VM's thread before it could park), and the
//! runtime's thread wrote the answer. A call the stdio guard answers itself runs as an
//! [`InlineTask`]: when the VM's thread hands it its answer (inside
//! [`polling_woken_here`]), the VM's thread polls the rest of the call itself — the answer's
//! JSON and its write to the client — and the runtime's thread sleeps through the call
//! until the client's next line. Lua still never runs on the runtime's thread; this runs
//! the runtime's code on the VM's thread, not the reverse.
//!
//! Any other wake (a cancellation, room in a full output queue, a timer, the end of the
//! call's notification forwarder) polls the task on the runtime it was started on, as a
//! spawned task would be. The task's code runs with that runtime's handle entered wherever
//! it is polled, so timers, spawns and IO it creates belong to that runtime; the thread's
//! scheduler is still the waking thread's, so the code polled this way must not
//! `spawn_local`, `block_in_place` or block on other work of that thread (a direct call's
//! answer path does none of these). A panic while polling or dropping ends the task, as it
//! ends a spawned tokio task.
//!
//! Unlike a spawned task, a task waiting for something is not dropped when its runtime
//! shuts down: it lives until what it waits for wakes it (a VM's job ends by its deadline
//! at the latest), and is then polled with the shut-down runtime entered. The stdio server
//! never leaves one behind (the session ends only once every call it answers has ended).

use parking_lot::Mutex;
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll, Wake, Waker};

thread_local! {
    /// This thread may poll a woken [`InlineTask`] itself (inside [`polling_woken_here`]).
    static POLL_HERE: Cell<bool> = const { Cell::new(false) };
}

/// Nobody is polling the task, and it waits for a wake.
const IDLE: u8 = 0;
/// One thread is polling the task (or is about to).
const POLLING: u8 = 1;
/// A wake came while it was being polled: the poller polls it again.
const WOKEN_WHILE_POLLING: u8 = 2;
/// The task has finished (or panicked): wakes do nothing.
const DONE: u8 = 3;

type TaskFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A future run to completion by whichever thread wakes it (see the module's docs).
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub(crate) struct InlineTask {
    state: AtomicU8,
    /// Taken by the one poller only (the state says who), so never contended.
    future: Mutex<Option<TaskFuture>>,
    runtime: tokio::runtime::Handle,
}

/// Runs `wakes` (which hands a task its answer) so that an [`InlineTask`] it wakes is polled
/// right here, on this thread, before it returns. Wakes inside that poll go to the task's
/// runtime as usual, so one answer never polls more than its own task here.
pub(crate) fn polling_woken_here<R>(wakes: impl FnOnce() -> R) -> R {
    let before = POLL_HERE.replace(true);
    let out = wakes();
    POLL_HERE.set(before);
    out
}

#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
impl InlineTask {
    /// Starts `future` on the current runtime's behalf and polls it a first time now, on
    /// this thread. Must be called inside a tokio runtime. Boxed by the caller: a large
    /// future passed by value would be copied on its way into the box.
    pub(crate) fn start(future: Pin<Box<dyn Future<Output = ()> + Send>>) {
        let task = Arc::new(Self {
            state: AtomicU8::new(POLLING),
            future: Mutex::new(Some(future)),
            runtime: tokio::runtime::Handle::current(),
        });
        task.poll_claimed();
    }

    /// Polls the future until it is pending without a wake in between, or done. The caller
    /// has moved the state to [`POLLING`].
    fn poll_claimed(self: &Arc<Self>) {
        let waker = Waker::from(self.clone());
        let mut cx = Context::from_waker(&waker);
        // The task's timers, spawns and IO belong to its own runtime, wherever it is polled.
        let _runtime = self.runtime.enter();
        // Wakes while polling are ordinary ones (see `polling_woken_here`).
        let here = POLL_HERE.replace(false);
        loop {
            let mut slot = self.future.lock();
            let Some(future) = slot.as_mut() else {
                self.state.store(DONE, Ordering::Release);
                break;
            };
            let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                future.as_mut().poll(&mut cx)
            }));
            match polled {
                Ok(Poll::Pending) => {
                    drop(slot);
                    match self.state.compare_exchange(
                        POLLING,
                        IDLE,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => break,
                        // Woken meanwhile: poll again rather than miss the wake.
                        Err(_) => self.state.store(POLLING, Ordering::Release),
                    }
                }
                Ok(Poll::Ready(())) | Err(_) => {
                    if polled.is_err() {
                        tracing::error!("a task panicked while it was polled; it was dropped");
                    }
                    // Dropped here, on the poller's thread, with the runtime entered; a
                    // panic in a drop is caught too, as tokio's tasks catch it.
                    let finished = slot.take();
                    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(finished)))
                        .is_err()
                    {
                        tracing::error!("a task panicked while it was dropped");
                    }
                    self.state.store(DONE, Ordering::Release);
                    break;
                }
            }
        }
        POLL_HERE.set(here);
    }
}

impl Wake for InlineTask {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let mut state = self.state.load(Ordering::Acquire);
        loop {
            let next = match state {
                IDLE => POLLING,
                POLLING => WOKEN_WHILE_POLLING,
                _ => return,
            };
            match self
                .state
                .compare_exchange(state, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if next == WOKEN_WHILE_POLLING => return,
                Ok(_) => break,
                Err(now) => state = now,
            }
        }
        // Claimed: poll it here if this thread may, else on its runtime.
        if POLL_HERE.get() {
            self.poll_claimed();
        } else {
            let task = self.clone();
            // A runtime that has shut down drops this at once, unpolled: the task is then
            // never polled again, and is freed when its wakers are (they sit in what it
            // waits for, which ends with the VM's job, at the latest its deadline).
            drop(self.runtime.spawn(async move { task.poll_claimed() }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
    }

    /// A one-shot answer handed over on a thread of its own, inside `polling_woken_here`.
    fn answer_on_thread(sender: tokio::sync::oneshot::Sender<u32>) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            polling_woken_here(|| {
                let _ = sender.send(7);
            })
        })
    }

    #[test]
    fn a_task_woken_by_an_answer_is_finished_on_the_answering_thread() {
        let runtime = runtime();
        let (sender, receiver) = tokio::sync::oneshot::channel::<u32>();
        let (done, finished) = std::sync::mpsc::channel();
        runtime.block_on(async {
            InlineTask::start(Box::pin(async move {
                let value = receiver.await.expect("answered");
                let _ = done.send((value, std::thread::current().id()));
            }));
        });
        let answering = answer_on_thread(sender);
        let answering_id = answering.thread().id();
        answering.join().expect("the answering thread ends");
        // Finished before the answering thread returned, on it, with the runtime idle.
        let (value, polled_on) = finished.try_recv().expect("finished by the answer");
        assert_eq!((value, polled_on), (7, answering_id));
    }

    #[test]
    fn a_task_woken_elsewhere_is_polled_on_its_runtime() {
        let runtime = runtime();
        let (sender, receiver) = tokio::sync::oneshot::channel::<u32>();
        let (done, finished) = tokio::sync::oneshot::channel();
        let runtime_thread = std::thread::current().id();
        let polled_on = runtime.block_on(async move {
            InlineTask::start(Box::pin(async move {
                let _ = receiver.await;
                let _ = done.send(std::thread::current().id());
            }));
            // An ordinary wake from another thread.
            std::thread::spawn(move || sender.send(1))
                .join()
                .expect("sent")
                .expect("open");
            finished.await.expect("the task ran on the runtime")
        });
        assert_eq!(polled_on, runtime_thread);
    }

    #[test]
    fn a_wake_during_a_poll_polls_the_task_again() {
        let runtime = runtime();
        let polls = Arc::new(AtomicUsize::new(0));
        let counted = polls.clone();
        runtime.block_on(async move {
            InlineTask::start(Box::pin(std::future::poll_fn(move |cx| {
                // Wakes itself during its first poll, then finishes.
                if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                    polling_woken_here(|| cx.waker().wake_by_ref());
                    Poll::Pending
                } else {
                    Poll::Ready(())
                }
            })));
        });
        assert_eq!(polls.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_panicking_task_is_dropped_and_its_wakes_do_nothing() {
        let runtime = runtime();
        let (sender, receiver) = tokio::sync::oneshot::channel::<u32>();
        runtime.block_on(async {
            InlineTask::start(Box::pin(async move {
                let _ = receiver.await;
                panic!("a task that panics");
            }));
        });
        // Polled (and panics) on the answering thread, which goes on.
        answer_on_thread(sender)
            .join()
            .expect("the panic stays in the task");
    }
}
