//! A warm start's judging shared with a helper thread. When the verdict cache knows every
//! candidate nothing is parsed and the caller judges them itself (reading each file is
//! most of it); a build's preparing thread, done with the first VM (or with
//! `effects.json`, when the caller took longer to list the candidates) before the caller is
//! done judging, takes candidates from the same queue instead of idling until the caller
//! needs it (docs/discovery.md, "a warm start's judging is shared").
//!
//! Whoever takes a candidate judges it; the caller takes candidates until none is left,
//! then waits only for the ones a helper is still judging (never for a helper that has not
//! come: a helper that comes late finds nothing to take). A helper never waits for the
//! caller, so the caller may wait for it.

use super::candidates::Candidate;
use super::judge::{self, Judgement};
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicUsize, Ordering};

/// One candidate's place in the queue.
enum Slot {
    /// Not taken yet: the candidate and the verdict cache's answer for it.
    Waiting(Candidate, Option<bool>),
    /// Taken, being judged (or already collected by the caller).
    Taken,
    /// Judged.
    Judged(Judgement),
}

/// Candidates the verdict cache knows (at most a few it does not), in load order, judged
/// by the caller and by whichever helpers join.
pub(crate) struct SharedJudging {
    slots: Vec<Mutex<Slot>>,
    /// The next candidate anyone takes.
    next: AtomicUsize,
    /// Helpers inside [`SharedJudging::help`].
    helping: AtomicUsize,
    /// Held to check `helping` before waiting, and to signal after a helper leaves, so no
    /// wake-up is lost between the two.
    lock: Mutex<()>,
    left: Condvar,
}

impl SharedJudging {
    /// The queue of `candidates`, each with the verdict cache's answer in `cached`.
    pub(super) fn new(candidates: Vec<Candidate>, cached: Vec<Option<bool>>) -> Self {
        Self {
            slots: candidates
                .into_iter()
                .zip(cached)
                .map(|(candidate, cached)| Mutex::new(Slot::Waiting(candidate, cached)))
                .collect(),
            next: AtomicUsize::new(0),
            helping: AtomicUsize::new(0),
            lock: Mutex::new(()),
            left: Condvar::new(),
        }
    }

    /// Judges candidates until none is left to take (a helper's part; it never waits).
    /// A judgement that panics is an error of that file, never a lost slot.
    pub(crate) fn help(&self) {
        // Counted in before taking anything: the caller, once nothing is left to take,
        // then sees every helper that took something (all orders SeqCst).
        self.helping.fetch_add(1, Ordering::SeqCst);
        let _leaving = Leaving(self);
        while let Some((index, candidate, cached)) = self.take() {
            // Kept for the verdict of a judgement that panics (the helper's own cost, off
            // the caller's path).
            let kept = candidate.clone();
            let judged = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                judge::judge_known(candidate, cached)
            }))
            .unwrap_or_else(|_| judge::unjudged(kept));
            *self.slots[index].lock() = Slot::Judged(judged);
        }
    }

    /// The caller's part: judges candidates until none is left to take, waits for those
    /// helpers are judging, and returns every judgement in load order.
    pub(super) fn judge_all(&self) -> Vec<Judgement> {
        while let Some((index, candidate, cached)) = self.take() {
            *self.slots[index].lock() = Slot::Judged(judge::judge_known(candidate, cached));
        }
        let mut guard = self.lock.lock();
        while self.helping.load(Ordering::SeqCst) > 0 {
            self.left.wait(&mut guard);
        }
        drop(guard);
        self.slots
            .iter()
            .map(
                |slot| match std::mem::replace(&mut *slot.lock(), Slot::Taken) {
                    Slot::Judged(judged) => judged,
                    // Unreachable: every slot was taken, and every helper that took one has
                    // left after filling it.
                    Slot::Waiting(candidate, cached) => judge::judge_known(candidate, cached),
                    Slot::Taken => unreachable_slot(),
                },
            )
            .collect()
    }

    /// The next candidate nobody has taken, with its index.
    fn take(&self) -> Option<(usize, Candidate, Option<bool>)> {
        loop {
            let index = self.next.fetch_add(1, Ordering::SeqCst);
            let slot = self.slots.get(index)?;
            if let Slot::Waiting(candidate, cached) =
                std::mem::replace(&mut *slot.lock(), Slot::Taken)
            {
                return Some((index, candidate, cached));
            }
        }
    }
}

/// A slot left taken but not judged: cannot happen (see [`SharedJudging::judge_all`]); a
/// verdict that says so rather than a panic, should it ever.
fn unreachable_slot() -> Judgement {
    let path = std::path::PathBuf::from("?");
    judge::unjudged(Candidate::new(0, path.clone(), path, None))
}

/// Counts a helper out when it leaves, however it leaves, and wakes the caller.
struct Leaving<'a>(&'a SharedJudging);

impl Drop for Leaving<'_> {
    fn drop(&mut self) {
        self.0.helping.fetch_sub(1, Ordering::SeqCst);
        drop(self.0.lock.lock());
        self.0.left.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::Reason;
    use std::sync::Arc;

    /// Candidates for `texts`, written as files in `dir`, in order, none known to the
    /// verdict cache (each is read and, registering or not, judged by the prefilter or
    /// parsed).
    fn queue(dir: &std::path::Path, texts: &[String]) -> SharedJudging {
        let candidates = crate::discovery::candidates::written(dir, texts);
        let cached = candidates.iter().map(|_| Some(true)).collect();
        SharedJudging::new(candidates, cached)
    }

    fn texts(count: usize) -> Vec<String> {
        (0..count)
            .map(|i| format!("registry.register{{ name = 't{i}' }}"))
            .collect()
    }

    fn shown(judgements: &[Judgement]) -> Vec<String> {
        judgements.iter().map(|j| j.verdict.shown.clone()).collect()
    }

    #[test]
    fn judgements_shared_with_a_helper_come_back_in_load_order() {
        let dir = tempfile::tempdir().unwrap();
        let shared = Arc::new(queue(dir.path(), &texts(200)));
        let helper = {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || shared.help())
        };
        let judgements = shared.judge_all();
        helper.join().unwrap();
        let expected: Vec<String> = (0..200)
            .map(|i| crate::discovery::path_text(&dir.path().join(format!("f{i:03}.lua"))))
            .collect();
        assert_eq!(shown(&judgements), expected);
        assert!(
            judgements
                .iter()
                .all(|j| j.verdict.reason == Reason::Registers && j.verdict.cached)
        );
    }

    #[test]
    fn a_helper_that_comes_after_the_caller_is_done_takes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let shared = queue(dir.path(), &texts(3));
        let judgements = shared.judge_all();
        shared.help();
        assert_eq!(judgements.len(), 3);
        assert_eq!(shared.helping.load(Ordering::SeqCst), 0);
        assert!(
            shared
                .slots
                .iter()
                .all(|s| matches!(*s.lock(), Slot::Taken))
        );
    }

    #[test]
    fn the_caller_waits_for_the_candidate_a_helper_is_judging() {
        let dir = tempfile::tempdir().unwrap();
        let shared = queue(dir.path(), &texts(2));
        // A helper that has taken candidate 0 and not yet judged it.
        shared.helping.fetch_add(1, Ordering::SeqCst);
        let (index, candidate, cached) = shared.take().unwrap();
        assert_eq!(index, 0);
        std::thread::scope(|scope| {
            let caller = scope.spawn(|| shared.judge_all());
            // The caller judges candidate 1 and finds nothing left to take; candidate 0 is
            // judged only after that.
            while shared.next.load(Ordering::SeqCst) < 3 {
                std::thread::yield_now();
            }
            *shared.slots[index].lock() = Slot::Judged(judge::judge_known(candidate, cached));
            drop(Leaving(&shared));
            let judgements = caller.join().unwrap();
            // Collected without waiting, slot 0 would be the placeholder's "?".
            let expected = crate::discovery::path_text(&dir.path().join("f000.lua"));
            assert_eq!(judgements[0].verdict.shown, expected);
            assert!(judgements.iter().all(|j| j.verdict.registers));
        });
    }
}
