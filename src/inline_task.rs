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
//! A runtime's shutdown does not know these tasks, so each one belongs to an
//! [`InlineTasks`] instead: when its owner closes it (the stdio session ending, however it
//! ends — also when its future is dropped with its runtime), every task of it that has not
//! finished is dropped there and then, as a runtime drops its spawned tasks, and is never
//! polled again. Without that, a task waiting for its VM's answer would outlive its
//! session and, woken by the answer (a VM's job ends by its deadline at the latest), write
//! it to an output whose session was gone.

use parking_lot::Mutex;
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Weak};
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
    /// Locked by the one poller (the state says who) while it polls, and by `close`, which
    /// so waits for a poll in progress before it drops the future.
    future: Mutex<Option<TaskFuture>>,
    runtime: tokio::runtime::Handle,
}

/// Runs `wakes` (which hands a task its answer) so that an [`InlineTask`] it wakes is polled
/// right here, on this thread, before it returns. Wakes inside that poll go to the task's
/// runtime as usual, so one answer never polls more than its own task here.
pub(crate) fn polling_woken_here<R>(wakes: impl FnOnce() -> R) -> R {
    let _restore = PollHere::set(true);
    wakes()
}

/// Sets whether this thread polls woken tasks itself, until dropped (also when unwinding:
/// a thread left polling them would run unrelated tasks' code).
struct PollHere(bool);

impl PollHere {
    fn set(here: bool) -> Self {
        Self(POLL_HERE.replace(here))
    }
}

impl Drop for PollHere {
    fn drop(&mut self) {
        POLL_HERE.set(self.0);
    }
}

#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
impl InlineTask {
    /// Starts `future` on the current runtime's behalf and polls it a first time now, on
    /// this thread. Must be called inside a tokio runtime. Boxed by the caller: a large
    /// future passed by value would be copied on its way into the box.
    ///
    /// The task belongs to `tasks`: closing it drops the task if it has not finished. A
    /// task started into a closed set is dropped at once, unpolled.
    pub(crate) fn start(tasks: &InlineTasks, future: Pin<Box<dyn Future<Output = ()> + Send>>) {
        let task = Arc::new(Self {
            state: AtomicU8::new(POLLING),
            future: Mutex::new(Some(future)),
            runtime: tokio::runtime::Handle::current(),
        });
        if tasks.adopt(&task) {
            task.poll_claimed();
        } else {
            task.close();
        }
    }

    /// Drops the future unless it has finished, and makes every later wake do nothing. A
    /// poll in progress on another thread is waited for (a poll never blocks); must not be
    /// called from inside a poll of this task.
    fn close(&self) {
        let unfinished = self.future.lock().take();
        self.state.store(DONE, Ordering::Release);
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(unfinished))).is_err() {
            tracing::error!("a task panicked while it was dropped");
        }
    }

    /// Polls the future until it is pending without a wake in between, or done. The caller
    /// has moved the state to [`POLLING`].
    fn poll_claimed(self: &Arc<Self>) {
        let waker = Waker::from(self.clone());
        let mut cx = Context::from_waker(&waker);
        // The task's timers, spawns and IO belong to its own runtime, wherever it is polled.
        let _runtime = self.runtime.enter();
        // Wakes while polling are ordinary ones (see `polling_woken_here`).
        let _restore = PollHere::set(false);
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
                        // Woken meanwhile: poll again rather than miss the wake — unless
                        // the set closed the task meanwhile.
                        Err(_) => {
                            let again = self.state.compare_exchange(
                                WOKEN_WHILE_POLLING,
                                POLLING,
                                Ordering::AcqRel,
                                Ordering::Acquire,
                            );
                            if again.is_err() {
                                break;
                            }
                        }
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
    }
}

/// The [`InlineTask`]s of one owner (a stdio session), which [`InlineTasks::close`] drops
/// if they have not finished. Holds them weakly: a finished task is freed as usual.
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
#[derive(Default)]
pub(crate) struct InlineTasks {
    list: Mutex<TaskList>,
}

#[derive(Default)]
struct TaskList {
    closed: bool,
    tasks: Vec<Weak<InlineTask>>,
    /// When the list reaches this length, finished tasks are pruned from it.
    prune_at: usize,
}

/// The least length at which the list is pruned of finished tasks.
const PRUNE_AT_LEAST: usize = 64;

#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
impl InlineTasks {
    /// Adds `task` unless the set is closed (false then).
    fn adopt(&self, task: &Arc<InlineTask>) -> bool {
        let mut list = self.list.lock();
        if list.closed {
            return false;
        }
        if list.tasks.len() >= list.prune_at {
            list.tasks.retain(|task| task.strong_count() > 0);
            // Amortised: pruned again only once as many tasks again have been added.
            list.prune_at = (list.tasks.len() * 2).max(PRUNE_AT_LEAST);
        }
        list.tasks.push(Arc::downgrade(task));
        true
    }

    /// Drops every task of the set that has not finished (waiting for a poll in progress on
    /// another thread to end), and every task started into it from now on. Must not be
    /// called from inside a poll of one of its tasks.
    pub(crate) fn close(&self) {
        let tasks = {
            let mut list = self.list.lock();
            list.closed = true;
            std::mem::take(&mut list.tasks)
        };
        for task in tasks.iter().filter_map(Weak::upgrade) {
            task.close();
        }
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
            InlineTask::start(
                &InlineTasks::default(),
                Box::pin(async move {
                    let value = receiver.await.expect("answered");
                    let _ = done.send((value, std::thread::current().id()));
                }),
            );
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
            InlineTask::start(
                &InlineTasks::default(),
                Box::pin(async move {
                    let _ = receiver.await;
                    let _ = done.send(std::thread::current().id());
                }),
            );
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
            InlineTask::start(
                &InlineTasks::default(),
                Box::pin(std::future::poll_fn(move |cx| {
                    // Wakes itself during its first poll, then finishes.
                    if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                        polling_woken_here(|| cx.waker().wake_by_ref());
                        Poll::Pending
                    } else {
                        Poll::Ready(())
                    }
                })),
            );
        });
        assert_eq!(polls.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_panicking_task_is_dropped_and_its_wakes_do_nothing() {
        let runtime = runtime();
        let (sender, receiver) = tokio::sync::oneshot::channel::<u32>();
        runtime.block_on(async {
            InlineTask::start(
                &InlineTasks::default(),
                Box::pin(async move {
                    let _ = receiver.await;
                    panic!("a task that panics");
                }),
            );
        });
        // Polled (and panics) on the answering thread, which goes on.
        answer_on_thread(sender)
            .join()
            .expect("the panic stays in the task");
    }

    /// Sends on `dropped` when dropped.
    struct DropSignal(Option<std::sync::mpsc::Sender<()>>);

    impl Drop for DropSignal {
        fn drop(&mut self) {
            if let Some(signal) = self.0.take() {
                let _ = signal.send(());
            }
        }
    }

    #[test]
    fn closing_the_set_drops_a_waiting_task_and_its_answer_is_never_polled() {
        let runtime = runtime();
        let tasks = InlineTasks::default();
        let (sender, receiver) = tokio::sync::oneshot::channel::<u32>();
        let (dropped, was_dropped) = std::sync::mpsc::channel();
        let polled_after = Arc::new(AtomicUsize::new(0));
        let counted = polled_after.clone();
        runtime.block_on(async {
            InlineTask::start(
                &tasks,
                Box::pin(async move {
                    let _signal = DropSignal(Some(dropped));
                    let _ = receiver.await;
                    counted.fetch_add(1, Ordering::SeqCst);
                }),
            );
        });
        tasks.close();
        was_dropped.try_recv().expect("dropped when the set closed");
        // The answer finds nobody waiting: the receiver went with the task.
        assert!(sender.send(7).is_err());
        assert_eq!(polled_after.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_task_started_into_a_closed_set_is_dropped_unpolled() {
        let runtime = runtime();
        let tasks = InlineTasks::default();
        tasks.close();
        let (dropped, was_dropped) = std::sync::mpsc::channel();
        let polls = Arc::new(AtomicUsize::new(0));
        let counted = polls.clone();
        runtime.block_on(async {
            let signal = DropSignal(Some(dropped));
            InlineTask::start(
                &tasks,
                Box::pin(async move {
                    let _signal = signal;
                    counted.fetch_add(1, Ordering::SeqCst);
                }),
            );
        });
        was_dropped.try_recv().expect("dropped at once");
        assert_eq!(polls.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn finished_tasks_are_pruned_from_the_set() {
        let runtime = runtime();
        let tasks = InlineTasks::default();
        runtime.block_on(async {
            for _ in 0..1_000 {
                InlineTask::start(&tasks, Box::pin(async {}));
            }
        });
        assert!(tasks.list.lock().tasks.len() <= PRUNE_AT_LEAST * 2);
    }
}
