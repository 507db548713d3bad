//! In-process limits (the memory store, or an embedder's memory store): `governor`'s
//! keyed GCRA limiters, one per configured limit, keyed by the counted key (a caller, a
//! caller × tool, or one shared key).

use crate::config::Rate;
use governor::clock::{Clock, DefaultClock};
use governor::{Quota, RateLimiter};
use std::num::NonZeroU32;
use std::time::Duration;

/// Keys kept before idle ones are dropped (a key whose budget is full again holds no
/// information): bounds the memory many callers or tools can take.
const RETAIN_ABOVE: usize = 10_000;

/// One limit's keyed limiter.
pub(super) struct Local {
    limiter:
        RateLimiter<String, governor::state::keyed::DefaultKeyedStateStore<String>, DefaultClock>,
}

impl Local {
    /// A limiter for `rate`.
    pub(super) fn new(rate: Rate) -> Self {
        // `Rate` is checked (interval ≥ 1 ns, burst ≥ 1): `with_period` cannot refuse it;
        // the fallback keeps a refusal from being a panic all the same.
        let burst = NonZeroU32::new(rate.burst).unwrap_or(NonZeroU32::MIN);
        let quota = Quota::with_period(rate.interval.max(Duration::from_nanos(1)))
            .unwrap_or_else(|| Quota::per_hour(NonZeroU32::MIN))
            .allow_burst(burst);
        Self {
            limiter: RateLimiter::keyed(quota),
        }
    }

    /// Counts a call for `key`; `Err(wait)` when it is over the limit.
    pub(super) fn take(&self, key: &str) -> Result<(), Duration> {
        if self.limiter.len() > RETAIN_ABOVE {
            self.limiter.retain_recent();
        }
        self.limiter
            .check_key(&key.to_string())
            .map_err(|not_until| not_until.wait_time_from(self.limiter.clock().now()))
    }
}
