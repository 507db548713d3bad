//! `time`: `time.now()` in milliseconds since the Unix epoch, `time.sleep(ms)` (async).

use mlua::{Lua, Table};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Longest accepted sleep; the per-call deadline normally cuts a call long before.
const MAX_SLEEP_MS: f64 = 24.0 * 3600.0 * 1000.0;

/// Builds the `time` table.
pub fn install(lua: &Lua) -> mlua::Result<Table> {
    let time = lua.create_table()?;
    time.set(
        "now",
        lua.create_function(|_, ()| {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            Ok(now.as_millis() as i64)
        })?,
    )?;
    time.set(
        "sleep",
        lua.create_async_function(|_, ms: f64| async move {
            if !ms.is_finite() || ms < 0.0 {
                return Err(mlua::Error::runtime(format!(
                    "time.sleep: milliseconds must be a finite number >= 0, got {ms}"
                )));
            }
            tokio::time::sleep(Duration::from_secs_f64(ms.min(MAX_SLEEP_MS) / 1000.0)).await;
            Ok(())
        })?,
    )?;
    Ok(time)
}
