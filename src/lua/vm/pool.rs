//! A pool of VMs, each with every tool loaded and each living on an OS thread of its own
//! (an actor): calls are sent to the VM's thread, which runs them as local tasks of its own
//! single-threaded runtime (so async handlers interleave while they await), and the caller
//! awaits the answer. No Lua — handler, probe or hook of a call — ever runs on the caller's
//! async workers, so a runaway or blocking tool can pin its VM but never the host's
//! runtime: `ping`, other VMs and unrelated work go on.
//!
//! Calls go to the least busy VM that holds the functions they need; module-level Lua state
//! is therefore per VM (a tool's upvalues and its required modules exist once per VM), and
//! `store` is the state they share. Synchronous probes outside calls (definitions,
//! `Host::availability`) use [`VmPool::lease`] and run on the caller's thread; async
//! callers run those on a blocking thread.

use super::LuaVm;
use crate::registry::LuaFnId;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// How long a caller waits actively for a quick answer, and a VM's thread for the next job,
/// before parking: a park and wake-up of a thread costs tens of microseconds here, several
/// times a whole echo call. Both spins are adaptive: a caller spins only while the VM's
/// last job ran within this time and the VM's thread is awake, and the VM's thread only
/// while jobs have recently come within this time, so slow handlers and calls that arrive
/// far apart (an MCP client's round trips) cost no CPU in spinning.
const SPIN: Duration = Duration::from_micros(50);

/// The longest a VM's thread goes, in jobs, between two spins while jobs come slowly.
///
/// Why it probes at all: when both sides park, each one's wait includes waking the other
/// (tens of microseconds on a slow CPU), so neither ever sees a quick answer again and
/// a tight loop of calls stays at the parked speed for good. A spin now and then finds out
/// whether jobs would come quickly if the thread stayed awake. The gap doubles after each
/// probe that found nothing, so calls that really do come far apart pay one spin in this
/// many jobs at most.
const PROBE_EVERY_MAX: u32 = 256;

/// How long a probe spins. Longer than [`SPIN`]: the job it waits for comes from a caller
/// that had parked and must first be woken (tens of microseconds, more on a busy two-core
/// machine). With the ordinary window a probe missed such a job again and again, and a
/// tight loop of calls stayed at the parked speed for a whole benchmark run. A job caught
/// within this window counts as quick, so the next wait spins and the caller (seeing the
/// VM's thread awake) spins for its answer: the fast hop is back.
const PROBE_SPIN: Duration = Duration::from_micros(250);

/// Work for a VM's thread: given the VM, a future to run there as a local task.
pub(super) type VmJob = Box<dyn FnOnce(Arc<LuaVm>) -> Pin<Box<dyn Future<Output = ()>>> + Send>;

/// One VM, its thread's inbox and how many calls it is serving.
struct Slot {
    vm: Arc<LuaVm>,
    inbox: mpsc::UnboundedSender<VmJob>,
    in_flight: AtomicUsize,
    /// The VM's last job ran within [`SPIN`] (measured on the VM's thread, so it does not
    /// include waking either thread): the next caller waits for its answer actively.
    quick_answers: AtomicBool,
    /// The VM's thread is (about to be) parked waiting for a job: waking it takes longer
    /// than a caller should spin, so callers then wait without spinning.
    parked: Arc<AtomicBool>,
}

/// The VMs of one loaded generation of tools. The first VM is complete by construction
/// (the registry was built from it); replicas may lack files that registered differently.
pub(crate) struct VmPool {
    slots: Vec<Slot>,
}

/// A VM lent to one synchronous use; counts as busy until dropped.
pub(crate) struct Lease<'a> {
    slot: &'a Slot,
}

impl Deref for Lease<'_> {
    type Target = LuaVm;
    fn deref(&self) -> &LuaVm {
        &self.slot.vm
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.slot.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Why a job sent to a VM produced no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VmGone(pub String);

impl VmPool {
    /// A pool of `primary` plus `replicas`, each on its own thread: the primary on `spare`
    /// when one was started for it (see [`SpareThread`]), every other VM on a thread started
    /// now.
    pub(crate) fn new(
        primary: LuaVm,
        replicas: Vec<LuaVm>,
        mut spare: Option<SpareThread>,
    ) -> Result<Self, crate::error::Error> {
        let slots = std::iter::once(primary)
            .chain(replicas)
            .enumerate()
            .map(|(index, vm)| match spare.take() {
                Some(thread) if index == 0 => thread.take(vm),
                _ => start(index, vm),
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { slots })
    }

    /// Number of VMs.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    fn pick(&self, needs: &[LuaFnId]) -> &Slot {
        // One VM (the usual case): it is the answer whatever it holds.
        if let [only] = self.slots.as_slice() {
            return only;
        }
        self.slots
            .iter()
            .filter(|slot| needs.iter().all(|id| slot.vm.has(*id)))
            .min_by_key(|slot| slot.in_flight.load(Ordering::Acquire))
            .unwrap_or(&self.slots[0])
    }

    /// The least busy VM holding every function in `needs` (the first VM if none does),
    /// for synchronous use on the caller's thread.
    pub(crate) fn lease(&self, needs: &[LuaFnId]) -> Lease<'_> {
        let slot = self.pick(needs);
        slot.in_flight.fetch_add(1, Ordering::AcqRel);
        Lease { slot }
    }

    /// Runs `work` on the thread of the least busy VM holding every function in `needs`
    /// and returns its answer.
    pub(crate) async fn run<T, F, Fut>(&self, needs: &[LuaFnId], work: F) -> Result<T, VmGone>
    where
        T: Send + 'static,
        F: FnOnce(Arc<LuaVm>) -> Fut + Send + 'static,
        Fut: Future<Output = T> + 'static,
    {
        let slot = self.pick(needs);
        slot.in_flight.fetch_add(1, Ordering::AcqRel);
        let _busy = Busy(&slot.in_flight);
        let (mut answer, answered) = oneshot::channel::<(T, bool)>();
        let queued = crate::telemetry::metric::Queued::new();
        let job: VmJob = Box::new(move |vm| {
            Box::pin(async move {
                let running = queued.start();
                let started = Instant::now();
                // A caller that gives up (a cancelled call) drops its receiver: the work is
                // dropped too, which stops a Lua handler at once.
                let work = work(vm);
                tokio::pin!(work);
                let out = tokio::select! {
                    out = &mut work => Some(out),
                    () = answer.closed() => None,
                };
                // Counted out before the answer leaves: whoever has the answer sees the
                // call no longer running.
                drop(running);
                if let Some(out) = out {
                    // A call the stdio guard answers itself is finished here, on this
                    // thread: its answer is written without waking the runtime's thread.
                    crate::inline_task::polling_woken_here(|| {
                        let _ = answer.send((out, started.elapsed() < SPIN));
                    });
                }
            })
        });
        slot.inbox
            .send(job)
            .map_err(|_| VmGone("the VM's thread has stopped".to_string()))?;
        // A short call is answered within microseconds: waiting for it briefly here saves
        // parking this thread and being woken, which costs far more than the call.
        let mut answered = answered;
        let sent = Instant::now();
        let mut answer = None;
        if slot.quick_answers.load(Ordering::Relaxed) && !slot.parked.load(Ordering::Relaxed) {
            while sent.elapsed() < SPIN {
                match answered.try_recv() {
                    Ok(value) => {
                        answer = Some(value);
                        break;
                    }
                    Err(oneshot::error::TryRecvError::Empty) => std::hint::spin_loop(),
                    Err(oneshot::error::TryRecvError::Closed) => break,
                }
            }
        }
        let (value, quick) = match answer {
            Some(answer) => answer,
            None => answered
                .await
                .map_err(|_| VmGone("the VM's thread dropped the call".to_string()))?,
        };
        slot.quick_answers.store(quick, Ordering::Relaxed);
        Ok(value)
    }
}

/// Counts a call as in flight on a VM until dropped (also when the caller gives up).
struct Busy<'a>(&'a AtomicUsize);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// How a VM's thread waits for its next job: whether jobs have recently come quickly, and
/// when it next spins anyway to find out (see [`PROBE_EVERY_MAX`]).
struct Pace {
    quick: bool,
    /// Jobs to wait for without spinning before the next probe.
    until_probe: u32,
    /// The gap between probes now: doubles after each probe that found nothing.
    probe_every: u32,
}

impl Pace {
    fn new() -> Self {
        Self {
            quick: true,
            until_probe: 1,
            probe_every: 1,
        }
    }

    /// How long this wait spins before parking (`None`: it parks at once).
    fn spins(&mut self) -> Option<Duration> {
        if self.quick {
            return Some(SPIN);
        }
        self.until_probe = self.until_probe.saturating_sub(1);
        (self.until_probe == 0).then_some(PROBE_SPIN)
    }

    /// Learns from one wait that took `waited`, having spun for `spun` first.
    fn waited(&mut self, waited: Duration, spun: Option<Duration>) {
        self.quick = waited < spun.unwrap_or(SPIN).max(SPIN);
        if self.quick {
            self.probe_every = 1;
        } else if spun.is_some() {
            self.probe_every = (self.probe_every * 2).min(PROBE_EVERY_MAX);
            self.until_probe = self.probe_every;
        }
    }
}

/// The next job: looked for actively for a moment when jobs have recently come quickly, or
/// now and then to find out whether they would (letting the VM's tasks run meanwhile), else
/// awaited. `None` once the pool is gone.
async fn next_job(
    jobs: &mut mpsc::UnboundedReceiver<VmJob>,
    pace: &mut Pace,
    parked: &AtomicBool,
) -> Option<VmJob> {
    let waiting = Instant::now();
    let spun = pace.spins();
    if let Some(window) = spun {
        while waiting.elapsed() < window {
            match jobs.try_recv() {
                Ok(job) => {
                    pace.waited(waiting.elapsed(), spun);
                    return Some(job);
                }
                Err(mpsc::error::TryRecvError::Disconnected) => return None,
                Err(mpsc::error::TryRecvError::Empty) => tokio::task::yield_now().await,
            }
        }
    }
    parked.store(true, Ordering::Relaxed);
    let job = jobs.recv().await;
    parked.store(false, Ordering::Relaxed);
    pace.waited(waiting.elapsed(), spun);
    job
}

/// Starts the thread of one VM: a single-threaded runtime (timers and IO for `time.sleep`
/// and `proc.run`) whose local tasks are the jobs sent to it. The thread ends when the pool
/// is dropped and its last job has finished.
fn start(index: usize, vm: LuaVm) -> Result<Slot, crate::error::Error> {
    SpareThread::start(index)?.take(vm)
}

/// A VM's thread started before its VM is made, its runtime built: it waits to be handed
/// the VM ([`VmPool::new`]). A build starts the first VM's thread this way on the thread
/// that prepares the VM, while the caller is still judging or loading the tool files, so
/// that starting a thread and building its runtime (system calls, and a stack and a timer
/// wheel to allocate) is off the caller's path. Dropped unused (a build that failed), the
/// thread ends.
pub(crate) struct SpareThread {
    index: usize,
    handoff: std::sync::mpsc::Sender<Handoff>,
}

/// What a [`SpareThread`] is handed: its VM, its inbox and its parked flag.
struct Handoff {
    vm: Arc<LuaVm>,
    jobs: mpsc::UnboundedReceiver<VmJob>,
    parked: Arc<AtomicBool>,
}

impl SpareThread {
    /// Starts the thread of VM `index` (`toolhost-vm-INDEX`) with its runtime.
    pub(crate) fn start(index: usize) -> Result<Self, crate::error::Error> {
        let failed = |source| crate::error::Error::VmThread { index, source };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(failed)?;
        let (handoff, handed) = std::sync::mpsc::channel::<Handoff>();
        std::thread::Builder::new()
            .name(format!("toolhost-vm-{index}"))
            .spawn(move || {
                if let Ok(handoff) = handed.recv() {
                    serve_jobs(runtime, handoff);
                }
            })
            .map_err(failed)?;
        Ok(Self { index, handoff })
    }

    /// Hands `vm` to the thread, which serves its jobs from now on.
    fn take(self, vm: LuaVm) -> Result<Slot, crate::error::Error> {
        let vm = Arc::new(vm);
        let (inbox, jobs) = mpsc::unbounded_channel::<VmJob>();
        let parked = Arc::new(AtomicBool::new(false));
        let handoff = Handoff {
            vm: vm.clone(),
            jobs,
            parked: parked.clone(),
        };
        self.handoff.send(handoff).map_err(|_| {
            let gone = std::io::Error::other("the VM's thread ended before it was given its VM");
            crate::error::Error::VmThread {
                index: self.index,
                source: gone,
            }
        })?;
        Ok(Slot {
            vm,
            inbox,
            in_flight: AtomicUsize::new(0),
            quick_answers: AtomicBool::new(true),
            parked,
        })
    }
}

/// A VM's thread: runs each job sent to it as a local task of `runtime` until the pool is
/// gone, then lets the running ones finish before the VM is closed.
fn serve_jobs(runtime: tokio::runtime::Runtime, handoff: Handoff) {
    let Handoff {
        vm,
        mut jobs,
        parked,
    } = handoff;
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async move {
        let mut pace = Pace::new();
        while let Some(job) = next_job(&mut jobs, &mut pace, &parked).await {
            tokio::task::spawn_local(job(vm.clone()));
        }
    });
    // Jobs still running when the pool went away finish before the VM is closed.
    runtime.block_on(local);
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLOW: Duration = Duration::from_millis(1);
    const FAST: Duration = Duration::from_micros(1);

    #[test]
    fn slow_jobs_are_probed_at_doubling_gaps_up_to_the_cap() {
        let mut pace = Pace::new();
        let mut spun_at = Vec::new();
        for wait in 0..2_000 {
            let spun = pace.spins();
            pace.waited(SLOW, spun);
            if spun.is_some() {
                spun_at.push(wait);
            }
        }
        let gaps: Vec<usize> = spun_at.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(&gaps[..8], &[2, 4, 8, 16, 32, 64, 128, 256]);
        assert!(gaps[8..].iter().all(|gap| *gap == PROBE_EVERY_MAX as usize));
    }

    #[test]
    fn a_probe_that_finds_a_quick_job_makes_every_wait_spin_again() {
        let mut pace = Pace::new();
        for _ in 0..100 {
            let spun = pace.spins();
            pace.waited(SLOW, spun);
        }
        // Slow waits until the next probe, which finds the job quickly.
        while pace.spins().is_none() {
            pace.waited(SLOW, None);
        }
        pace.waited(FAST, Some(PROBE_SPIN));
        assert!((0..10).all(|_| {
            let spun = pace.spins();
            pace.waited(FAST, spun);
            spun == Some(SPIN)
        }));
    }

    #[test]
    fn a_probe_spins_longer_and_a_job_it_catches_late_still_counts_as_quick() {
        let mut pace = Pace::new();
        pace.waited(SLOW, Some(SPIN));
        // The first probe comes two waits later, with the longer window.
        assert_eq!(pace.spins(), None);
        pace.waited(SLOW, None);
        assert_eq!(pace.spins(), Some(PROBE_SPIN));
        // A woken caller's job, later than an ordinary spin would have waited.
        pace.waited(SPIN * 3, Some(PROBE_SPIN));
        assert_eq!(pace.spins(), Some(SPIN));
    }
}
