//! The shared rate limiter's state (DESIGN.md: "the shared limiter is a small GCRA in the
//! backend"): one theoretical arrival time (TAT) per (limit, key) row in the host's own
//! namespace [`LIMITS`], which no tool can name (tools reach only `builtin` and
//! `plugin:<id>`). Each step reads and writes the row under the backend's `update`, so two
//! processes sharing a SQLite file or a PostgreSQL database never both take the last place
//! (`Backend::rate_take`).
//!
//! Times are nanoseconds since the Unix epoch from the calling process's clock: the
//! replicas of a fleet are assumed to keep their clocks in step (NTP); a clock that is
//! ahead spends its callers' budget early, never lets more calls through overall than the
//! burst plus the rate allow per clock.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The namespace of the limiter's rows.
pub(crate) const LIMITS: &str = "host:limits";

/// A rate in the limiter's terms: one call every `interval_ns`, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gcra {
    /// Nanoseconds between two calls at the steady rate (at least 1).
    pub interval_ns: u64,
    /// Calls allowed at once (at least 1).
    pub burst: u32,
}

/// What one step decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// The call is allowed (and counted).
    Allowed,
    /// The call is over the limit: the next one is allowed after this long.
    RetryAfter(Duration),
}

impl Gcra {
    /// The new TAT (when allowed) and the decision for a call at `now`, from the stored
    /// TAT (`None`: a fresh key). Saturating throughout: a TAT from a far-future clock or a
    /// hostile row never overflows, it only refuses.
    pub(crate) fn step(self, tat: Option<u64>, now: u64) -> (Option<u64>, Decision) {
        let interval = self.interval_ns.max(1);
        let tolerance = interval.saturating_mul(u64::from(self.burst.max(1)) - 1);
        let tat = tat.unwrap_or(now).max(now);
        let allowed_from = tat.saturating_sub(tolerance);
        if now < allowed_from {
            let wait = Duration::from_nanos(allowed_from - now);
            return (None, Decision::RetryAfter(wait));
        }
        (Some(tat.saturating_add(interval)), Decision::Allowed)
    }
}

/// Nanoseconds since the Unix epoch now (0 for a clock before it).
pub(crate) fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000_000;

    #[test]
    fn a_burst_passes_then_the_next_call_waits_one_interval() {
        let rate = Gcra {
            interval_ns: SECOND,
            burst: 3,
        };
        let mut tat = None;
        for _ in 0..3 {
            let (new, decision) = rate.step(tat, 100 * SECOND);
            assert_eq!(decision, Decision::Allowed);
            tat = new;
        }
        let (new, decision) = rate.step(tat, 100 * SECOND);
        assert_eq!(new, None);
        assert_eq!(decision, Decision::RetryAfter(Duration::from_secs(1)));
        // One interval later exactly one more call passes.
        let (new, decision) = rate.step(tat, 101 * SECOND);
        assert_eq!(decision, Decision::Allowed);
        let (_, decision) = rate.step(new, 101 * SECOND);
        assert_eq!(decision, Decision::RetryAfter(Duration::from_secs(1)));
    }

    #[test]
    fn hostile_times_saturate_instead_of_overflowing() {
        let rate = Gcra {
            interval_ns: u64::MAX,
            burst: u32::MAX,
        };
        assert_eq!(rate.step(None, u64::MAX).1, Decision::Allowed);
        let far = Gcra {
            interval_ns: 1,
            burst: 1,
        };
        let (_, decision) = far.step(Some(u64::MAX), 0);
        assert!(matches!(decision, Decision::RetryAfter(_)));
        assert_eq!(far.step(Some(0), u64::MAX).1, Decision::Allowed);
    }
}
