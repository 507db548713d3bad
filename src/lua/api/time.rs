//! `time`: `time.now()` in milliseconds since the Unix epoch, `time.sleep(ms)` (awaits, so
//! other calls run on the VM meanwhile).

use super::{ApiContext, ApiFunction, Calling, failure, function};
use mlua::Value as LuaValue;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Longest accepted sleep; the per-call deadline normally cuts a call long before.
const MAX_SLEEP_MS: f64 = 24.0 * 3600.0 * 1000.0;

/// The `time` entries of the host API.
pub(crate) fn functions() -> Vec<ApiFunction> {
    vec![
        ApiFunction {
            module: "time",
            name: "now",
            params: &[],
            returns: "integer",
            doc: "Milliseconds since the Unix epoch",
            make: |lua, _: &ApiContext| {
                function(lua, |_, ()| {
                    let now = SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .unwrap_or_default();
                    Ok(now.as_millis() as i64)
                })
            },
            calling: Calling::Anywhere,
            constant: false,
        },
        ApiFunction {
            module: "time",
            name: "sleep",
            params: &[("ms", "number")],
            returns: "",
            doc: "Waits `ms` milliseconds without blocking the VM (handlers only)",
            make: |lua, _: &ApiContext| {
                lua.create_async_function(|_, ms: f64| async move {
                    if !ms.is_finite() || ms < 0.0 {
                        return Err(failure(
                            "time",
                            "sleep",
                            format!("milliseconds must be a finite number >= 0, got {ms}"),
                        ));
                    }
                    let wait = Duration::from_secs_f64(ms.min(MAX_SLEEP_MS) / 1000.0);
                    crate::lua::call::timer::sleep_until(std::time::Instant::now() + wait).await;
                    Ok(())
                })
                .map(LuaValue::Function)
            },
            calling: Calling::HandlerOnly,
            constant: false,
        },
    ]
}
