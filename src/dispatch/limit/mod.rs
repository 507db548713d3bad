//! Rate limits (`[limits]`, docs/limits.md), checked in the admission stage: every limit
//! that applies to a call — `limits.callers.ID.tools.NAME`, `limits.callers.ID`,
//! `limits.tools.NAME`, `limits.default` (each caller × tool) — counts it, most specific
//! first; the first over its limit refuses the call with its key and when to retry.
//! `ctx.call`s are calls: they pass the same stage.
//!
//! Where the counts live: with the memory store, in this process (`governor`, `local.rs`);
//! with SQLite or PostgreSQL, in the store's `host:limits` namespace, so every process
//! sharing the file or the database shares the limits (a GCRA step per row, `store::gcra`).
//! A store that cannot answer (down, locked, out of time) fails the call closed with an
//! `unavailable` error naming the limit: a limit never lets calls through silently, and
//! only calls that a limit applies to wait for the store.

mod caller;
mod local;

pub(crate) use caller::caller_key;

use super::errors::ErrorType;
use super::result::ToolError;
use crate::config::{LimitsConfig, Rate};
use crate::store::{Decision, Gcra, StoreInner, Wait};
use local::Local;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The host's limiter, rebuilt only when `[limits]` changes (a reload that keeps the
/// limits keeps their in-process counts).
pub(crate) struct Limiters {
    store: Arc<StoreInner>,
    current: Mutex<Option<(LimitsConfig, Arc<Limiter>)>>,
}

impl Limiters {
    /// Limiters counting in `store` (in this process when it is the memory store).
    pub(crate) fn new(store: Arc<StoreInner>) -> Self {
        Self {
            store,
            current: Mutex::new(None),
        }
    }

    /// Counts a call of `tool` by `caller` against every limit of `config` that applies;
    /// the error refuses the call. Store waits end at `wait`.
    pub(crate) fn check(
        &self,
        config: &LimitsConfig,
        tool: &str,
        caller: &str,
        wait: &Wait,
    ) -> Result<(), Box<ToolError>> {
        if config.is_unlimited() {
            return Ok(());
        }
        // The loaded configuration was checked, so it resolves; if it did not, the call is
        // refused rather than let through unlimited.
        let limiter = self.limiter(config).map_err(|message| {
            Box::new(ToolError::new(
                ErrorType::Unavailable,
                format!("Tool {tool} is unavailable: [limits] is invalid: {message}"),
            ))
        })?;
        limiter.check(&self.store, tool, caller, wait)
    }

    /// The limiter for `config`: the current one while `[limits]` stays the same.
    fn limiter(&self, config: &LimitsConfig) -> Result<Arc<Limiter>, String> {
        let mut current = self.current.lock();
        if let Some((seen, limiter)) = &*current
            && seen == config
        {
            return Ok(limiter.clone());
        }
        let limits = config.resolve()?;
        let shared = self.store.backend_name() != "memory";
        let limiter = Arc::new(Limiter::new(limits, shared));
        *current = Some((config.clone(), limiter.clone()));
        Ok(limiter)
    }
}

/// One configured limit.
struct Entry {
    /// Its key in the configuration (`limits.tools.search`): what a refusal names.
    name: String,
    /// Its table (`default`, `tool`, `caller`, `caller_tool`): the rejections metric's
    /// label (bounded, unlike the names).
    kind: &'static str,
    rate: Rate,
    /// Its in-process counts (`None`: counted in the store).
    local: Option<Local>,
}

impl Entry {
    fn new(name: String, kind: &'static str, rate: Rate, shared: bool) -> Self {
        Self {
            name,
            kind,
            rate,
            local: (!shared).then(|| Local::new(rate)),
        }
    }
}

/// The limits of one `[limits]` configuration.
pub(crate) struct Limiter {
    default: Option<Entry>,
    tools: BTreeMap<String, Entry>,
    callers: BTreeMap<String, Entry>,
    caller_tools: BTreeMap<(String, String), Entry>,
}

impl Limiter {
    fn new(limits: crate::config::Limits, shared: bool) -> Self {
        Self {
            default: limits
                .default
                .map(|rate| Entry::new("limits.default".into(), "default", rate, shared)),
            tools: limits
                .tools
                .into_iter()
                .map(|(tool, rate)| {
                    let name = format!("limits.tools.{tool}");
                    (tool, Entry::new(name, "tool", rate, shared))
                })
                .collect(),
            callers: limits
                .callers
                .into_iter()
                .map(|(caller, rate)| {
                    let name = format!("limits.callers.{caller}");
                    (caller, Entry::new(name, "caller", rate, shared))
                })
                .collect(),
            caller_tools: limits
                .caller_tools
                .into_iter()
                .map(|((caller, tool), rate)| {
                    let name = format!("limits.callers.{caller}.tools.{tool}");
                    (
                        (caller, tool),
                        Entry::new(name, "caller_tool", rate, shared),
                    )
                })
                .collect(),
        }
    }

    /// The limits that apply to `tool` called by `caller`, most specific first, each with
    /// the key it counts under: its kind and the caller and tool it counts (a JSON array,
    /// so no caller id or tool name can make two limits share a row).
    fn applicable(&self, tool: &str, caller: &str) -> Vec<(&Entry, String)> {
        let key = |parts: &[&str]| serde_json::Value::from(parts.to_vec()).to_string();
        // `[limits.callers.ID]` names a caller's whole key (`token:ci`) or its id (`ci`).
        let id = caller::id_of(caller);
        let mut found = Vec::new();
        let caller_tool = |who: &str| self.caller_tools.get(&(who.to_string(), tool.to_string()));
        if let Some(entry) = caller_tool(caller).or_else(|| caller_tool(id)) {
            found.push((entry, key(&["caller_tool", caller, tool])));
        }
        if let Some(entry) = self.callers.get(caller).or_else(|| self.callers.get(id)) {
            found.push((entry, key(&["caller", caller])));
        }
        if let Some(entry) = self.tools.get(tool) {
            found.push((entry, key(&["tool", tool])));
        }
        if let Some(entry) = &self.default {
            found.push((entry, key(&["default", caller, tool])));
        }
        found
    }

    /// Counts the call against every applicable limit; the first one over its limit
    /// refuses it (the ones before it have counted it: a refused call spends the more
    /// specific budgets, never lets more through).
    fn check(
        &self,
        store: &StoreInner,
        tool: &str,
        caller: &str,
        wait: &Wait,
    ) -> Result<(), Box<ToolError>> {
        for (entry, key) in self.applicable(tool, caller) {
            let verdict = match &entry.local {
                Some(local) => local.take(&key),
                None => {
                    let rate = Gcra {
                        interval_ns: u64::try_from(entry.rate.interval.as_nanos())
                            .unwrap_or(u64::MAX),
                        burst: entry.rate.burst,
                    };
                    match store.rate_take(&key, rate, wait) {
                        Ok(Decision::Allowed) => Ok(()),
                        Ok(Decision::RetryAfter(after)) => Err(after),
                        Err(e) => {
                            return Err(Box::new(ToolError::new(
                                ErrorType::Unavailable,
                                format!(
                                    "Tool {tool} is unavailable: the rate limit {} could not \
                                     be checked ({e}); the call was not run",
                                    entry.name
                                ),
                            )));
                        }
                    }
                }
            };
            if let Err(after) = verdict {
                crate::telemetry::metric::rate_limited(entry.kind);
                return Err(Box::new(refused(tool, &entry.name, after)));
            }
        }
        Ok(())
    }
}

/// The `rate_limited` error for a call of `tool` over `limit`, retryable after `after`.
fn refused(tool: &str, limit: &str, after: Duration) -> ToolError {
    let ms = retry_ms(after);
    ToolError::new(
        ErrorType::RateLimited,
        format!("Rate limit {limit} reached for tool {tool}: retry in {ms} ms"),
    )
    .with_tool(tool)
    .with_retry(limit, ms)
}

/// `after` in whole milliseconds, rounded up (a retry at the hint is never early).
fn retry_ms(after: Duration) -> u64 {
    let nanos = after.as_nanos();
    u64::try_from(nanos.div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests;
