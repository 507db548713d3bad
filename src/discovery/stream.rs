//! Judging candidates on every core: parser threads (large stacks) take the candidates in
//! load order and each writes its judgement into the candidate's own slot, while the caller
//! may already use the verdicts judged so far (the loader runs file i as soon as slot i is
//! filled). A judgement that panics is a parse error of that file; a slot no thread is left
//! to fill is judged by the caller: whoever waits for a slot never waits for a thread that
//! is gone.

use super::Verdict;
use super::cache::VerdictCache;
use super::candidates::Candidate;
use super::judge::{self, Judgement, PARSER_STACK_BYTES};
use parking_lot::{Condvar, Mutex};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Verdicts in load order, each available once judged (at once when judging is over).
pub(crate) trait InOrder {
    /// How many candidates there are.
    fn count(&self) -> usize;
    /// Candidate `index`'s verdict, waiting until it is judged.
    fn verdict(&self, index: usize) -> &Verdict;
}

impl InOrder for Vec<Verdict> {
    fn count(&self) -> usize {
        self.len()
    }
    fn verdict(&self, index: usize) -> &Verdict {
        &self[index]
    }
}

impl InOrder for Vec<Judgement> {
    fn count(&self) -> usize {
        self.len()
    }
    fn verdict(&self, index: usize) -> &Verdict {
        &self[index].verdict
    }
}

/// Candidates being judged by parser threads, one slot each.
pub(crate) struct Judging<'a> {
    candidates: &'a [Candidate],
    previous: &'a VerdictCache,
    slots: Vec<OnceLock<Judgement>>,
    /// The next candidate a thread takes.
    next: AtomicUsize,
    /// Parser threads still running.
    alive: AtomicUsize,
    /// Held to check a slot before waiting, and to signal after filling one, so no wake-up
    /// is lost between the two.
    lock: Mutex<()>,
    filled: Condvar,
}

impl InOrder for Judging<'_> {
    fn count(&self) -> usize {
        self.slots.len()
    }

    fn verdict(&self, index: usize) -> &Verdict {
        let slot = &self.slots[index];
        if let Some(judged) = slot.get() {
            return &judged.verdict;
        }
        let mut guard = self.lock.lock();
        loop {
            if let Some(judged) = slot.get() {
                return &judged.verdict;
            }
            if self.alive.load(Ordering::Acquire) == 0 {
                let candidate = self.candidates[index].clone();
                return &slot
                    .get_or_init(|| judge_on_caller(candidate, self.previous))
                    .verdict;
            }
            self.filled.wait(&mut guard);
        }
    }
}

impl<'a> Judging<'a> {
    fn new(candidates: &'a [Candidate], previous: &'a VerdictCache) -> Self {
        Self {
            candidates,
            previous,
            slots: candidates.iter().map(|_| OnceLock::new()).collect(),
            next: AtomicUsize::new(0),
            alive: AtomicUsize::new(0),
            lock: Mutex::new(()),
            filled: Condvar::new(),
        }
    }

    /// A parser thread's loop: the next candidate in load order, until none is left.
    fn work(&self) {
        loop {
            let index = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(candidate) = self.candidates.get(index) else {
                break;
            };
            let judged =
                std::panic::catch_unwind(|| judge::judge_one(candidate.clone(), self.previous))
                    .unwrap_or_else(|_| judge::unjudged(candidate.clone()));
            let _ = self.slots[index].set(judged);
            self.signal();
        }
    }

    /// Wakes whoever waits for a slot (taking the lock first: see `lock`).
    fn signal(&self) {
        drop(self.lock.lock());
        self.filled.notify_all();
    }

    /// Every judgement, in load order; a slot nobody filled is judged now, on the caller.
    fn into_judgements(self) -> Vec<Judgement> {
        let previous = self.previous;
        self.slots
            .into_iter()
            .zip(self.candidates)
            .map(|(slot, candidate)| {
                slot.into_inner()
                    .unwrap_or_else(|| judge_on_caller(candidate.clone(), previous))
            })
            .collect()
    }
}

/// A candidate no parser thread is left to judge (none could start: a memory limit, a
/// thread limit): every step but the parse on the caller, the parse (when it needs one) on
/// a thread of its own, never on the caller's stack. Only a file that needs a parse can then
/// fail for want of a thread; a cached or prefiltered one is judged as ever.
fn judge_on_caller(candidate: Candidate, previous: &VerdictCache) -> Judgement {
    let cached = judge::cached_verdict(&candidate, previous);
    judge::judge_known(candidate, cached)
}

/// Counts a parser thread out when it ends, however it ends, and wakes the waiters.
struct Leaving<'j, 'a>(&'j Judging<'a>);

impl Drop for Leaving<'_, '_> {
    fn drop(&mut self) {
        self.0.alive.fetch_sub(1, Ordering::AcqRel);
        self.0.signal();
    }
}

/// Judges `candidates` on one parser thread per core while `meanwhile` runs on the caller
/// (never parsing there: the caller may be on a small async stack), and returns every
/// judgement in load order with what `meanwhile` returned.
pub(super) fn judge_while<R>(
    candidates: &[Candidate],
    previous: &VerdictCache,
    meanwhile: impl FnOnce(&(dyn InOrder + Sync)) -> R,
) -> (Vec<Judgement>, R) {
    let judging = Judging::new(candidates, previous);
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(candidates.len());
    let result = std::thread::scope(|scope| {
        for _ in 0..threads {
            // Counted in before it starts, so a waiter never sees zero while one is coming.
            judging.alive.fetch_add(1, Ordering::AcqRel);
            let spawned = std::thread::Builder::new()
                .name("toolhost-parse".into())
                .stack_size(PARSER_STACK_BYTES)
                .spawn_scoped(scope, || {
                    let _leaving = Leaving(&judging);
                    judging.work();
                });
            if let Err(e) = spawned {
                tracing::warn!("cannot start a parser thread: {e}");
                drop(Leaving(&judging));
            }
        }
        meanwhile(&judging)
    });
    (judging.into_judgements(), result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::Reason;
    use crate::discovery::candidates::written;

    #[test]
    fn a_slot_no_thread_is_left_to_fill_is_judged_by_the_caller_not_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let found = written(
            dir.path(),
            &[
                "registry.register{ name = 'a' }",
                "return {}",
                "registry.register{",
            ],
        );
        let previous = VerdictCache::default();
        // No parser thread ever started.
        let judging = Judging::new(&found, &previous);
        assert_eq!(judging.verdict(0).reason, Reason::Registers);
        assert_eq!(judging.verdict(1).reason, Reason::Prefilter);
        let judgements = judging.into_judgements();
        let reasons: Vec<Reason> = judgements.iter().map(|j| j.verdict.reason).collect();
        assert_eq!(
            reasons,
            [Reason::Registers, Reason::Prefilter, Reason::ParseError]
        );
    }

    #[test]
    fn the_caller_sees_each_verdict_in_load_order_as_the_threads_give_them() {
        let dir = tempfile::tempdir().unwrap();
        let texts: Vec<String> = (0..64)
            .map(|i| match i % 3 {
                0 => format!("registry.register{{ name = 't{i}' }}"),
                1 => "return {}".to_string(),
                _ => "registry.register{ name = ".to_string(),
            })
            .collect();
        let found = written(dir.path(), &texts);
        let previous = VerdictCache::default();
        let (judgements, seen) = judge_while(&found, &previous, |judged| {
            (0..judged.count())
                .map(|i| judged.verdict(i).reason)
                .collect::<Vec<_>>()
        });
        let expected: Vec<Reason> = (0..64)
            .map(|i| match i % 3 {
                0 => Reason::Registers,
                1 => Reason::Prefilter,
                _ => Reason::ParseError,
            })
            .collect();
        assert_eq!(seen, expected);
        let kept: Vec<Reason> = judgements.iter().map(|j| j.verdict.reason).collect();
        assert_eq!(kept, expected);
    }
}
