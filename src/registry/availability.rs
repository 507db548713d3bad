//! Availability (docs/calls.md): a tool is available iff every `requires_env` variable is set and
//! non-empty and its `check_fn` (if any) says yes.
//!
//! `check_fn` answers are cached per (check_fn, scope) for a TTL (default 30 s): tools that
//! share one `check_fn` function (a toolset-wide probe) share its answer, so the probe runs
//! once per scope and TTL however many tools use it. A failure
//! (false or a raise) within the grace period (60 s) after the last success is treated as
//! transient: the tool stays available, and the failure is remembered for a back-off of
//! `min(grace, ttl)` during which no probe runs (a storm of calls costs one probe); after it
//! the next check probes again. At most 512 answers are kept.
//! The cache never holds its lock while a probe runs, so a slow probe blocks nobody else;
//! concurrent checks of the same (check_fn, scope) share one running probe (single flight).
//!
//! The *epoch* moves whenever a cached answer is added, changes or is dropped, so memoised
//! tool definitions keyed on it never outlive the answers they were built from.

use super::entry::{Probe, ToolEntry};
use crate::env_vars::EnvVars;
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Default time a `check_fn` answer is reused.
pub(crate) const DEFAULT_CHECK_TTL: Duration = Duration::from_secs(30);
/// A failure this soon after the last success is transient.
pub(crate) const FAILURE_GRACE: Duration = Duration::from_secs(60);
/// Most cached answers.
pub(crate) const MAX_CACHED_CHECKS: usize = 512;
/// How long a check waits for another thread's probe of the same (check_fn, scope) before
/// it runs its own.
const FLIGHT_WAIT: Duration = Duration::from_secs(10);

/// Why the tool's environment is not satisfied, or `None` when it is.
pub(crate) fn missing_env(tool: &ToolEntry, env: &EnvVars) -> Option<String> {
    let missing: Vec<&str> = tool
        .requires_env
        .iter()
        .filter(|name| env.var_os(name).is_none_or(|v| v.is_empty()))
        .map(String::as_str)
        .collect();
    match missing.as_slice() {
        [] => None,
        [one] => Some(format!("environment variable {one} is not set")),
        many => Some(format!(
            "environment variables {} are not set",
            many.join(", ")
        )),
    }
}

/// How long an answer may be reused by whoever derives something from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Freshness {
    /// Not from a probe (no `check_fn`, or the environment decided): reusable.
    Always,
    /// A cached probe answer, good until then.
    Until(Instant),
    /// A transient answer: never reuse it.
    Never,
}

impl Freshness {
    /// The stricter of two freshnesses.
    pub(crate) fn min(self, other: Freshness) -> Freshness {
        match (self, other) {
            (Freshness::Never, _) | (_, Freshness::Never) => Freshness::Never,
            (Freshness::Always, x) | (x, Freshness::Always) => x,
            (Freshness::Until(a), Freshness::Until(b)) => Freshness::Until(a.min(b)),
        }
    }

    /// True while an answer of this freshness may still be reused at `now`.
    pub(crate) fn is_fresh(self, now: Instant) -> bool {
        match self {
            Freshness::Always => true,
            Freshness::Until(until) => now < until,
            Freshness::Never => false,
        }
    }
}

/// The answer for one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Availability {
    /// Whether the tool may be offered and called.
    pub available: bool,
    /// Why not, when unavailable.
    pub reason: Option<String>,
    /// How long this answer may be reused.
    pub freshness: Freshness,
}

impl Availability {
    fn yes(freshness: Freshness) -> Self {
        Self {
            available: true,
            reason: None,
            freshness,
        }
    }

    fn no(reason: String, freshness: Freshness) -> Self {
        Self {
            available: false,
            reason: Some(reason),
            freshness,
        }
    }
}

/// What running a `check_fn` gave.
pub(crate) type ProbeOutcome = Result<Probed, ProbeFailed>;

/// Why a probe (a `check_fn`, a `dynamic_schema_overrides` function) could not answer: it
/// raised, ran past its deadline, returned something unusable, or its function is missing.
/// Shown after `check_fn failed: ` for a `check_fn`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ProbeFailed(pub String);

/// The VM's messages are text: `?` turns them into a probe failure.
impl From<String> for ProbeFailed {
    fn from(message: String) -> Self {
        Self(message)
    }
}

impl From<&str> for ProbeFailed {
    fn from(message: &str) -> Self {
        Self(message.to_string())
    }
}

/// Runs a `check_fn` wherever its function lives: a VM runs it itself; the pool on a VM
/// holding it. Implemented where the VMs are known (the runtime layer sits above this one).
pub(crate) trait CheckRunner {
    /// Runs `probe`.
    fn run_check(&self, probe: &Probe<bool>) -> ProbeOutcome;
}

/// What a probe said: available, or not (with its own reason when it gave one: a Lua
/// `check_fn` may return `false, "why"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Probed {
    /// Available.
    Yes,
    /// Not available; the probe's reason, if any.
    No(Option<String>),
}

impl From<bool> for Probed {
    fn from(available: bool) -> Self {
        match available {
            true => Probed::Yes,
            false => Probed::No(None),
        }
    }
}

/// The reason shown for a probe that said no.
fn said_no(reason: Option<String>) -> String {
    reason.unwrap_or_else(|| "check_fn returned false".to_string())
}

#[derive(Debug, Clone)]
struct Cached {
    available: bool,
    reason: Option<String>,
    at: Instant,
}

/// Identity of a `check_fn`: the VM function slot or the Rust closure's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum ProbeKey {
    Lua(u64),
    Native(usize),
}

impl ProbeKey {
    fn of(probe: &Probe<bool>) -> Self {
        match probe {
            Probe::Lua(id) => ProbeKey::Lua(id.0),
            Probe::Native(f) => ProbeKey::Native(std::sync::Arc::as_ptr(f) as *const () as usize),
        }
    }
}

/// Cached answers by scope (`""` is the global scope: real scopes are never empty), then
/// by probe; keyed this way so a lookup allocates nothing.
#[derive(Debug, Default)]
struct Inner {
    answers: HashMap<String, HashMap<ProbeKey, Cached>>,
    last_success: HashMap<(String, ProbeKey), Instant>,
    /// Transient failures: no probe until then.
    backoff: HashMap<(String, ProbeKey), Instant>,
    /// Probes running now.
    flights: HashMap<(String, ProbeKey), Arc<Flight>>,
    count: usize,
    generation: u64,
}

/// One running probe others may wait for.
#[derive(Debug, Default)]
struct Flight {
    done: Mutex<bool>,
    landed: Condvar,
}

impl Flight {
    /// Waits until the probe has finished (or `limit` passed); true when it finished.
    fn wait(&self, limit: Duration) -> bool {
        let mut done = self.done.lock();
        if !*done {
            let _ = self.landed.wait_for(&mut done, limit);
        }
        *done
    }
}

/// Ends a flight when the probe returns or unwinds.
struct Landing<'a> {
    cache: &'a AvailabilityCache,
    key: (String, ProbeKey),
    flight: Arc<Flight>,
}

impl Drop for Landing<'_> {
    fn drop(&mut self) {
        self.cache.inner.lock().flights.remove(&self.key);
        *self.flight.done.lock() = true;
        self.flight.landed.notify_all();
    }
}

impl Inner {
    fn clear(&mut self) {
        self.answers.clear();
        self.last_success.clear();
        self.backoff.clear();
        self.count = 0;
    }

    fn get(&self, scope: &str, probe: ProbeKey) -> Option<&Cached> {
        self.answers
            .get(scope)
            .and_then(|by_probe| by_probe.get(&probe))
    }

    fn remove(&mut self, scope: &str, probe: ProbeKey) -> bool {
        let removed = self
            .answers
            .get_mut(scope)
            .and_then(|by_probe| by_probe.remove(&probe))
            .is_some();
        if removed {
            self.count -= 1;
        }
        removed
    }

    fn insert(&mut self, scope: &str, probe: ProbeKey, cached: Cached) {
        let previous = self
            .answers
            .entry(scope.to_string())
            .or_default()
            .insert(probe, cached);
        if previous.is_none() {
            self.count += 1;
        }
    }

    fn evict_oldest(&mut self) {
        let oldest = self
            .answers
            .iter()
            .flat_map(|(scope, by_probe)| by_probe.iter().map(move |(p, c)| (scope, *p, c.at)))
            .min_by_key(|(_, _, at)| *at)
            .map(|(scope, probe, _)| (scope.clone(), probe));
        if let Some((scope, probe)) = oldest {
            self.remove(&scope, probe);
            self.last_success.remove(&(scope, probe));
        }
    }
}

/// The `check_fn` answer cache.
#[derive(Debug)]
pub(crate) struct AvailabilityCache {
    inner: Mutex<Inner>,
    ttl: Duration,
    epoch: AtomicU64,
    /// Where `requires_env` is looked up.
    env: EnvVars,
}

impl AvailabilityCache {
    /// A cache reusing answers for `ttl`.
    pub(crate) fn new(ttl: Duration) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            ttl,
            epoch: AtomicU64::new(0),
            env: EnvVars::default(),
        }
    }

    /// The same cache judging `requires_env` against `env`.
    pub(crate) fn with_env(mut self, env: EnvVars) -> Self {
        self.env = env;
        self
    }

    /// Moves whenever a cached answer appears, changes or goes away.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Drops every cached answer (`invalidate_availability`).
    pub(crate) fn invalidate(&self) {
        self.inner.lock().clear();
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// Why `tool` is unavailable whatever its `check_fn` says (a missing environment
    /// variable, its MCP server being down), without running anything.
    pub(crate) fn unavailable_without_probe(&self, tool: &ToolEntry) -> Option<String> {
        missing_env(tool, &self.env).or_else(|| tool.offline.clone())
    }

    /// The one way to ask whether `tool` is available to `scope` (dispatch, definitions and
    /// the host all come here): the environment and server state first, then the cached
    /// answer of its `check_fn`, else the `check_fn` run on `runner`. `generation` is the
    /// registry snapshot's; `now` is passed in so a list of tools is judged at one instant.
    pub(crate) fn availability<R: CheckRunner + ?Sized>(
        &self,
        tool: &ToolEntry,
        scope: Option<&str>,
        generation: u64,
        now: Instant,
        runner: &R,
    ) -> Availability {
        self.check(tool, scope, generation, now, || match &tool.check_fn {
            Some(check_fn) => runner.run_check(check_fn),
            // `check` never probes a tool without a `check_fn`.
            None => Ok(Probed::Yes),
        })
    }

    /// Answers for `tool` as seen from `scope` at registry `generation`, running `probe`
    /// (without holding any lock) when there is a `check_fn` and no fresh cached answer.
    fn check(
        &self,
        tool: &ToolEntry,
        scope: Option<&str>,
        generation: u64,
        now: Instant,
        probe: impl FnOnce() -> ProbeOutcome,
    ) -> Availability {
        if let Some(reason) = self.unavailable_without_probe(tool) {
            return Availability::no(reason, Freshness::Always);
        }
        let Some(check_fn) = &tool.check_fn else {
            return Availability::yes(Freshness::Always);
        };
        let probe_key = ProbeKey::of(check_fn);
        let scope_key = scope.unwrap_or("");
        let flight_key = (scope_key.to_string(), probe_key);
        let mut waited = false;
        let landing = loop {
            let mut inner = self.inner.lock();
            if inner.generation != generation {
                // Tools may have changed: answers about the old ones mean nothing.
                inner.clear();
                inner.generation = generation;
                self.epoch.fetch_add(1, Ordering::AcqRel);
            }
            if let Some(cached) = inner.get(scope_key, probe_key)
                && now.saturating_duration_since(cached.at) < self.ttl
            {
                let until = Freshness::Until(cached.at + self.ttl);
                return match cached.available {
                    true => Availability::yes(until),
                    false => Availability::no(cached.reason.clone().unwrap_or_default(), until),
                };
            }
            if let Some(until) = inner.backoff.get(&flight_key).copied()
                && now < until
            {
                return Availability::yes(Freshness::Until(until));
            }
            match inner.flights.get(&flight_key).cloned() {
                // Someone is probing this right now: wait for their answer, once.
                Some(flight) if !waited => {
                    drop(inner);
                    waited = true;
                    flight.wait(FLIGHT_WAIT);
                }
                Some(_) => break None,
                None => {
                    let flight = Arc::new(Flight::default());
                    inner.flights.insert(flight_key.clone(), flight.clone());
                    break Some(Landing {
                        cache: self,
                        key: flight_key.clone(),
                        flight,
                    });
                }
            }
        };
        let outcome = probe();
        // `landing` ends the flight when this function returns, after the answer is stored
        // (the lock below is released first: it was taken later), so a woken waiter finds it.
        let _landing = landing;
        let mut inner = self.inner.lock();
        if inner.generation != generation {
            // The registry moved on while we probed; answer, but do not cache.
            return match outcome {
                Ok(Probed::Yes) => Availability::yes(Freshness::Never),
                Ok(Probed::No(reason)) => Availability::no(said_no(reason), Freshness::Never),
                Err(e) => Availability::no(format!("check_fn failed: {e}"), Freshness::Never),
            };
        }
        let (available, reason) = match outcome {
            Ok(Probed::Yes) => (true, None),
            Ok(Probed::No(reason)) => (false, Some(said_no(reason))),
            Err(error) => {
                tracing::warn!("check_fn of '{}' failed: {error}", tool.name);
                (false, Some(format!("check_fn failed: {error}")))
            }
        };
        let success_key = flight_key;
        if available {
            inner.last_success.insert(success_key.clone(), now);
            inner.backoff.remove(&success_key);
        } else if let Some(grace_ends) = inner
            .last_success
            .get(&success_key)
            .map(|ok| *ok + FAILURE_GRACE)
            .filter(|ends| now < *ends)
        {
            // Transient: keep offering the tool; ask again only after the back-off, which
            // never outlives the grace window (a probe that keeps failing must make the
            // tool unavailable once the window closes).
            if inner.remove(scope_key, probe_key) {
                self.epoch.fetch_add(1, Ordering::AcqRel);
            }
            let until = (now + FAILURE_GRACE.min(self.ttl)).min(grace_ends);
            inner.backoff.insert(success_key, until);
            return Availability::yes(Freshness::Until(until));
        }
        let existing = inner.get(scope_key, probe_key);
        let changed = existing.is_none_or(|old| old.available != available);
        if existing.is_none() && inner.count >= MAX_CACHED_CHECKS {
            inner.evict_oldest();
        }
        inner.insert(
            scope_key,
            probe_key,
            Cached {
                available,
                reason: reason.clone(),
                at: now,
            },
        );
        if changed {
            self.epoch.fetch_add(1, Ordering::AcqRel);
        }
        let until = Freshness::Until(now + self.ttl);
        match reason {
            None => Availability::yes(until),
            Some(reason) => Availability::no(reason, until),
        }
    }

    /// Number of cached answers.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.inner.lock().count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{LuaFnId, test_entry};

    fn tool(name: &str, env: &[&str]) -> ToolEntry {
        probe_tool(name, env, 1)
    }

    fn probe_tool(name: &str, env: &[&str], probe: u64) -> ToolEntry {
        let mut entry = ToolEntry {
            check_fn: Some(Probe::Lua(LuaFnId(probe))),
            ..test_entry(name, "t")
        };
        entry.registration.requires_env = env.iter().map(|s| s.to_string()).collect();
        entry
    }

    const TTL: Duration = Duration::from_secs(30);

    #[test]
    fn answers_are_cached_for_the_ttl_per_scope() {
        let cache = AvailabilityCache::new(TTL);
        let t = tool("a", &[]);
        let t0 = Instant::now();
        let mut runs = 0;
        let mut ask = |scope, at| {
            cache.check(&t, scope, 1, at, || {
                runs += 1;
                Ok(Probed::Yes)
            })
        };
        assert!(ask(None, t0).available);
        assert!(ask(None, t0 + Duration::from_secs(29)).available);
        assert!(ask(Some("s"), t0).available);
        assert!(ask(None, t0 + Duration::from_secs(31)).available);
        assert_eq!(runs, 3, "one probe per scope, and one after the TTL");
    }

    #[test]
    fn a_transient_failure_backs_off_instead_of_probing_every_call() {
        let cache = AvailabilityCache::new(TTL);
        let t = tool("a", &[]);
        let t0 = Instant::now();
        assert!(cache.check(&t, None, 1, t0, || Ok(Probed::Yes)).available);
        let later = t0 + Duration::from_secs(31);
        let transient = cache.check(&t, None, 1, later, || Ok(Probed::No(None)));
        assert!(
            transient.available,
            "within the grace period a failure is transient"
        );
        // The back-off (min(grace, ttl) = 30 s) would end at 61 s, past the grace window
        // (60 s after the success): a grace answer never outlives the window.
        let back_off = t0 + FAILURE_GRACE;
        assert_eq!(transient.freshness, Freshness::Until(back_off));
        // A storm of calls inside the back-off costs no probe.
        for step in 0..100 {
            let at = later + Duration::from_millis(step * 100);
            let answer = cache.check(&t, None, 1, at, || panic!("must not probe"));
            assert!(answer.available);
        }
        // After it, the next check probes again; past the grace period a failure counts.
        let mut probed = false;
        let down = cache.check(&t, None, 1, back_off, || {
            probed = true;
            Err("boom".into())
        });
        assert!(probed);
        assert!(!down.available);
        assert_eq!(down.reason.as_deref(), Some("check_fn failed: boom"));
        let cached = cache.check(&t, None, 1, back_off, || panic!("must not probe"));
        assert!(!cached.available);
    }

    #[test]
    fn concurrent_checks_share_one_running_probe() {
        let cache = Arc::new(AvailabilityCache::new(TTL));
        let t = Arc::new(tool("a", &[]));
        let probes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (entered_tx, entered_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let now = Instant::now();
        let leader = {
            let (cache, t, probes) = (cache.clone(), t.clone(), probes.clone());
            std::thread::spawn(move || {
                cache.check(&t, None, 1, now, || {
                    probes.fetch_add(1, Ordering::SeqCst);
                    entered_tx.send(()).unwrap();
                    release_rx.recv().unwrap();
                    Ok(Probed::Yes)
                })
            })
        };
        entered_rx.recv().unwrap();
        let followers: Vec<_> = (0..4)
            .map(|_| {
                let (cache, t, probes) = (cache.clone(), t.clone(), probes.clone());
                std::thread::spawn(move || {
                    cache.check(&t, None, 1, now, || {
                        probes.fetch_add(1, Ordering::SeqCst);
                        Ok(Probed::Yes)
                    })
                })
            })
            .collect();
        // Wait until all four followers hold the leader's flight (the map and the leader's
        // landing hold the other two references), i.e. they wait instead of probing.
        let waiting = || {
            let inner = cache.inner.lock();
            inner.flights.values().next().map(Arc::strong_count)
        };
        while waiting() != Some(6) {
            std::thread::yield_now();
        }
        release_tx.send(()).unwrap();
        assert!(leader.join().unwrap().available);
        for follower in followers {
            assert!(follower.join().unwrap().available);
        }
        assert_eq!(
            probes.load(Ordering::SeqCst),
            1,
            "one probe for all five checks"
        );
    }

    #[test]
    fn tools_sharing_a_check_fn_share_its_answer() {
        let cache = AvailabilityCache::new(TTL);
        let (a, b) = (probe_tool("a", &[], 7), probe_tool("b", &[], 7));
        let t0 = Instant::now();
        assert!(cache.check(&a, None, 1, t0, || Ok(Probed::Yes)).available);
        assert!(
            cache
                .check(&b, None, 1, t0, || panic!("shared answer"))
                .available
        );
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_probe_that_keeps_failing_is_unavailable_once_the_grace_window_closes() {
        // 25 s does not divide the 60 s window: a back-off from 50 s would end at 75 s.
        let ttl = Duration::from_secs(25);
        let cache = AvailabilityCache::new(ttl);
        let t = tool("a", &[]);
        let t0 = Instant::now();
        assert!(cache.check(&t, None, 1, t0, || Ok(Probed::Yes)).available);
        // Failing on every probe from 25 s on: each answer inside the window is a grace
        // "yes" whose freshness ends by the window's end; the first probe at or after it
        // says no.
        let mut at = t0 + ttl;
        let window_ends = t0 + FAILURE_GRACE;
        loop {
            let answer = cache.check(&t, None, 1, at, || Ok(Probed::No(None)));
            if !answer.available {
                assert!(at >= window_ends, "unavailable before the window closed");
                break;
            }
            let Freshness::Until(until) = answer.freshness else {
                panic!("a grace answer must expire: {answer:?}");
            };
            assert!(until <= window_ends, "a grace yes outlived the window");
            at = until;
        }
        assert!(
            at < window_ends + ttl,
            "noticed within one TTL of the window's end"
        );
    }

    #[test]
    fn a_recovery_inside_the_back_off_is_noticed_within_one_ttl_and_kept_for_a_full_one() {
        let ttl = Duration::from_secs(20);
        let cache = AvailabilityCache::new(ttl);
        let t = tool("a", &[]);
        let t0 = Instant::now();
        assert!(cache.check(&t, None, 1, t0, || Ok(Probed::Yes)).available);
        // Fails at 20 s (transient: a back-off until 40 s), recovers at 25 s.
        let failed = cache.check(&t, None, 1, t0 + ttl, || Ok(Probed::No(None)));
        assert!(failed.available);
        let Freshness::Until(back_off_ends) = failed.freshness else {
            panic!("a grace answer must expire: {failed:?}");
        };
        assert!(
            back_off_ends <= t0 + ttl + ttl,
            "the back-off is at most one TTL"
        );
        // The first check after the back-off probes and sees the recovery...
        let mut probed = false;
        let recovered = cache.check(&t, None, 1, back_off_ends, || {
            probed = true;
            Ok(Probed::Yes)
        });
        assert!(probed && recovered.available);
        // ...which is then cached for the normal TTL (no probe before it ends).
        assert_eq!(recovered.freshness, Freshness::Until(back_off_ends + ttl));
        let later = back_off_ends + ttl - Duration::from_millis(1);
        assert!(
            cache
                .check(&t, None, 1, later, || panic!("must not probe"))
                .available
        );
    }

    #[test]
    fn a_first_failure_is_not_transient() {
        let cache = AvailabilityCache::new(TTL);
        let t = tool("a", &[]);
        let out = cache.check(&t, None, 1, Instant::now(), || Ok(Probed::No(None)));
        assert!(!out.available);
        assert_eq!(out.reason.as_deref(), Some("check_fn returned false"));
    }

    #[test]
    fn env_is_checked_first_and_never_probes() {
        let cache = AvailabilityCache::new(TTL);
        let t = tool("a", &["TOOLHOST_UNIT_TEST_UNSET_VAR"]);
        let out = cache.check(&t, None, 1, Instant::now(), || panic!("must not probe"));
        assert!(!out.available);
        assert!(out.reason.unwrap().contains("TOOLHOST_UNIT_TEST_UNSET_VAR"));
    }

    #[test]
    fn epoch_moves_on_change_invalidation_and_generation() {
        let cache = AvailabilityCache::new(TTL);
        let t = tool("a", &[]);
        let t0 = Instant::now();
        let e0 = cache.epoch();
        cache.check(&t, None, 1, t0, || Ok(Probed::Yes));
        let e1 = cache.epoch();
        assert!(e1 > e0);
        cache.check(&t, None, 1, t0 + Duration::from_secs(31), || {
            Ok(Probed::Yes)
        });
        assert_eq!(cache.epoch(), e1, "an unchanged answer keeps the epoch");
        cache.invalidate();
        assert!(cache.epoch() > e1);
        assert!(cache.len() == 0);
        cache.check(&t, None, 1, t0, || Ok(Probed::Yes));
        let e2 = cache.epoch();
        cache.check(&t, None, 2, t0, || Ok(Probed::Yes));
        assert!(cache.epoch() > e2, "a new generation drops old answers");
    }

    #[test]
    fn at_most_512_answers_are_kept() {
        let cache = AvailabilityCache::new(TTL);
        let t0 = Instant::now();
        for i in 0..600 {
            let t = probe_tool(&format!("t{i}"), &[], i);
            cache.check(&t, None, 1, t0 + Duration::from_millis(i), || {
                Ok(Probed::Yes)
            });
        }
        assert_eq!(cache.len(), MAX_CACHED_CHECKS);
    }
}
