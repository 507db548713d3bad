//! `[limits]`: rate limits per tool, per caller and per caller × tool
//! (docs/configuration.md, docs/limits.md). Each table has `rate = "N/s" | "N/m" | "N/h"`
//! and `burst = N`; the texts are checked when the file is read, so a bad rate is an error
//! naming its key, never a limit silently left out.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// Largest `burst`: with the slowest rate (1/h) the limiter's tolerance, (burst − 1) ×
/// one hour in nanoseconds, stays far inside `u64`, and the in-process limiter takes a
/// `u32`.
pub(crate) const MAX_BURST: u64 = 1_000_000;

/// `[limits]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LimitsConfig {
    /// `[limits.default]`: every caller, on every tool (one budget per caller × tool).
    pub default: Option<LimitConfig>,
    /// `[limits.tools.NAME]`: all callers of the tool together.
    #[serde(default)]
    pub tools: BTreeMap<String, LimitConfig>,
    /// `[limits.callers.ID]`: one caller, all its tools together, and its
    /// `[limits.callers.ID.tools.NAME]` per tool.
    #[serde(default)]
    pub callers: BTreeMap<String, CallerLimitConfig>,
}

/// One limit as written: `rate` and `burst`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LimitConfig {
    /// `"N/s"`, `"N/m"` or `"N/h"` (required).
    pub rate: Option<String>,
    /// Calls allowed at once before the rate applies (default N of the rate, at most
    /// [`MAX_BURST`]).
    pub burst: Option<u64>,
}

/// `[limits.callers.ID]`: the caller's own limit (optional) and its per-tool limits.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CallerLimitConfig {
    /// The caller's rate over all tools (optional when only `tools` is set).
    pub rate: Option<String>,
    /// Its burst.
    pub burst: Option<u64>,
    /// `[limits.callers.ID.tools.NAME]`.
    #[serde(default)]
    pub tools: BTreeMap<String, LimitConfig>,
}

/// A checked limit: one call every `interval`, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Rate {
    /// The time one call's share of the rate takes (the unit divided by N).
    pub interval: Duration,
    /// Calls allowed at once (1 ..= [`MAX_BURST`]).
    pub burst: u32,
}

/// Every limit of `[limits]`, checked, under the key that names it in messages
/// (`limits.tools.search`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Limits {
    /// `limits.default`.
    pub default: Option<Rate>,
    /// `limits.tools.NAME`.
    pub tools: BTreeMap<String, Rate>,
    /// `limits.callers.ID`.
    pub callers: BTreeMap<String, Rate>,
    /// `limits.callers.ID.tools.NAME`, by (caller, tool).
    pub caller_tools: BTreeMap<(String, String), Rate>,
}

impl LimitsConfig {
    /// True when no limit is configured at all (no `[limits]` table, or an empty one): calls
    /// count nowhere.
    pub(crate) fn is_unlimited(&self) -> bool {
        self.default.is_none() && self.tools.is_empty() && self.callers.is_empty()
    }

    /// Checks every table and gives the limits; the error names the key
    /// (`limits.tools.echo.rate: "5/x" is not N/s, N/m or N/h`).
    pub(crate) fn resolve(&self) -> Result<Limits, String> {
        let mut limits = Limits::default();
        if let Some(default) = &self.default {
            limits.default = Some(default.rate("limits.default")?);
        }
        for (tool, limit) in &self.tools {
            let rate = limit.rate(&format!("limits.tools.{tool}"))?;
            limits.tools.insert(tool.clone(), rate);
        }
        for (caller, limit) in &self.callers {
            let key = format!("limits.callers.{caller}");
            let own = LimitConfig {
                rate: limit.rate.clone(),
                burst: limit.burst,
            };
            // A caller table may hold only per-tool limits.
            if own.rate.is_some() || own.burst.is_some() || limit.tools.is_empty() {
                limits.callers.insert(caller.clone(), own.rate(&key)?);
            }
            for (tool, limit) in &limit.tools {
                let rate = limit.rate(&format!("{key}.tools.{tool}"))?;
                limits
                    .caller_tools
                    .insert((caller.clone(), tool.clone()), rate);
            }
        }
        Ok(limits)
    }
}

impl LimitConfig {
    /// The checked rate of the table at `key`.
    fn rate(&self, key: &str) -> Result<Rate, String> {
        let Some(text) = &self.rate else {
            return Err(format!("{key}.rate: missing (\"N/s\", \"N/m\" or \"N/h\")"));
        };
        let (count, unit) = parse_rate(text)
            .ok_or_else(|| format!("{key}.rate: {text:?} is not N/s, N/m or N/h"))?;
        if count == 0 {
            return Err(format!(
                "{key}.rate: {text:?} allows no call; the count must be at least 1"
            ));
        }
        let unit_ns = unit.as_nanos() as u64;
        if count > unit_ns {
            return Err(format!(
                "{key}.rate: {text:?} is more than one call a nanosecond"
            ));
        }
        let burst = match self.burst {
            Some(0) => return Err(format!("{key}.burst: must be at least 1")),
            Some(burst) if burst > MAX_BURST => {
                return Err(format!(
                    "{key}.burst: {burst} is over the largest, {MAX_BURST}"
                ));
            }
            Some(burst) => burst,
            None => count.min(MAX_BURST),
        };
        Ok(Rate {
            interval: Duration::from_nanos(unit_ns / count),
            burst: u32::try_from(burst).unwrap_or(u32::MAX),
        })
    }
}

/// `"N/s"`, `"N/m"`, `"N/h"` as (N, the unit); `None` for anything else (no spaces, no
/// sign, N in decimal digits that fit a `u64`).
fn parse_rate(text: &str) -> Option<(u64, Duration)> {
    let (count, unit) = text.split_once('/')?;
    if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let count: u64 = count.parse().ok()?;
    let unit = match unit {
        "s" => Duration::from_secs(1),
        "m" => Duration::from_secs(60),
        "h" => Duration::from_secs(3600),
        _ => return None,
    };
    Some((count, unit))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(text: &str) -> Result<Limits, String> {
        let config: LimitsConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        config.resolve()
    }

    #[test]
    fn a_rate_is_one_call_every_unit_over_n_with_a_burst_of_n_by_default() {
        let limits = limits("[tools.echo]\nrate = \"5/s\"\n").unwrap();
        let rate = limits.tools["echo"];
        assert_eq!(rate.interval, Duration::from_millis(200));
        assert_eq!(rate.burst, 5);
        let limits = limits_with("[default]\nrate = \"2/m\"\nburst = 7\n");
        assert_eq!(
            limits.default,
            Some(Rate {
                interval: Duration::from_secs(30),
                burst: 7
            })
        );
    }

    fn limits_with(text: &str) -> Limits {
        limits(text).unwrap()
    }

    #[test]
    fn a_bad_rate_is_an_error_naming_its_key() {
        let error = limits("[tools.echo]\nrate = \"5/x\"\n").unwrap_err();
        assert_eq!(
            error,
            "limits.tools.echo.rate: \"5/x\" is not N/s, N/m or N/h"
        );
        for bad in [
            "", "5", "/s", "-5/s", "+5/s", " 5/s", "5/ s", "5.5/s", "5/sec",
        ] {
            let error = limits(&format!("[default]\nrate = {bad:?}\n")).unwrap_err();
            assert!(
                error.starts_with("limits.default.rate: "),
                "{bad:?}: {error}"
            );
        }
    }

    #[test]
    fn hostile_numbers_are_errors_not_panics() {
        let cases = [
            (
                "rate = \"0/s\"",
                "limits.default.rate: \"0/s\" allows no call",
            ),
            (
                "rate = \"99999999999999999999999/s\"",
                "is not N/s, N/m or N/h",
            ),
            ("rate = \"1000000001/s\"", "more than one call a nanosecond"),
            (
                "rate = \"1/s\"\nburst = 0",
                "limits.default.burst: must be at least 1",
            ),
            (
                "rate = \"1/h\"\nburst = 1000001",
                "limits.default.burst: 1000001 is over the largest",
            ),
        ];
        for (body, expected) in cases {
            let error = limits(&format!("[default]\n{body}\n")).unwrap_err();
            assert!(error.contains(expected), "{body}: {error}");
        }
        // A negative or huge burst does not fit the model's type: a parse error.
        assert!(limits("[default]\nrate = \"1/s\"\nburst = -1\n").is_err());
        // The largest rate's default burst is capped, not an error.
        let fast = limits_with("[default]\nrate = \"1000000000/s\"\n");
        assert_eq!(fast.default.map(|r| r.burst), Some(MAX_BURST as u32));
    }

    #[test]
    fn a_missing_rate_and_unknown_keys_are_errors() {
        let error = limits("[tools.echo]\nburst = 3\n").unwrap_err();
        assert!(
            error.starts_with("limits.tools.echo.rate: missing"),
            "{error}"
        );
        assert!(limits("[tools.echo]\nrate = \"1/s\"\nbrust = 3\n").is_err());
        assert!(limits("[everyone]\nrate = \"1/s\"\n").is_err());
    }

    #[test]
    fn a_caller_table_may_hold_only_per_tool_limits() {
        let limits = limits_with("[callers.ci.tools.search]\nrate = \"3/m\"\n");
        assert!(limits.callers.is_empty());
        let rate = limits.caller_tools[&("ci".to_string(), "search".to_string())];
        assert_eq!(rate.burst, 3);
        let error = self::limits("[callers.ci.tools.search]\nrate = \"3/d\"\n").unwrap_err();
        assert!(
            error.starts_with("limits.callers.ci.tools.search.rate: "),
            "{error}"
        );
        let error = self::limits("[callers.ci]\n").unwrap_err();
        assert!(
            error.starts_with("limits.callers.ci.rate: missing"),
            "{error}"
        );
    }
}
