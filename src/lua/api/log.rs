//! `log`: tracing from Lua, tagged with the calling file and line; `print` logs at info.

use mlua::{Lua, MultiValue, Table};

/// Where the Lua code that called us is, as `file:line`.
fn caller(lua: &Lua) -> String {
    lua.inspect_stack(1, |debug| {
        let source = debug.source();
        let file = source.short_src.as_deref().unwrap_or("?").to_string();
        match debug.current_line() {
            Some(line) => format!("{file}:{line}"),
            None => file,
        }
    })
    .unwrap_or_default()
}

fn join(lua: &Lua, args: MultiValue) -> mlua::Result<String> {
    let mut parts = Vec::with_capacity(args.len());
    for value in args {
        let text = match lua.coerce_string(value.clone())? {
            Some(s) => s.to_string_lossy(),
            None => format!("{value:?}"),
        };
        parts.push(text);
    }
    Ok(parts.join("\t"))
}

/// A Lua function logging its arguments at `level`, tagged with the caller's position.
fn logger(lua: &Lua, level: tracing::Level) -> mlua::Result<mlua::Function> {
    lua.create_function(move |lua, args: MultiValue| {
        let at = caller(lua);
        let text = join(lua, args)?;
        match level {
            tracing::Level::ERROR => tracing::error!(target: "toolhost::lua", at = %at, "{text}"),
            tracing::Level::WARN => tracing::warn!(target: "toolhost::lua", at = %at, "{text}"),
            tracing::Level::INFO => tracing::info!(target: "toolhost::lua", at = %at, "{text}"),
            _ => tracing::debug!(target: "toolhost::lua", at = %at, "{text}"),
        }
        Ok(())
    })
}

/// Builds the `log` table (`debug`, `info`, `warn`, `error`).
pub fn install(lua: &Lua) -> mlua::Result<Table> {
    let log = lua.create_table()?;
    log.set("debug", logger(lua, tracing::Level::DEBUG)?)?;
    log.set("info", logger(lua, tracing::Level::INFO)?)?;
    log.set("warn", logger(lua, tracing::Level::WARN)?)?;
    log.set("error", logger(lua, tracing::Level::ERROR)?)?;
    Ok(log)
}

/// `print` (and `log.info`): stdout belongs to results and the MCP protocol, so Lua output
/// goes to the log on stderr.
pub fn print_function(lua: &Lua) -> mlua::Result<mlua::Function> {
    logger(lua, tracing::Level::INFO)
}
