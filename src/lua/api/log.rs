//! `log`: tracing from Lua, tagged with the calling file and line; `print` logs at info
//! (stdout belongs to results and the MCP protocol).

use super::{ApiContext, ApiFunction, Calling};
use mlua::{Lua, MultiValue, Value as LuaValue};

/// The `log` entries of the host API.
pub(crate) fn functions() -> Vec<ApiFunction> {
    let entry = |name, doc, make| ApiFunction {
        module: "log",
        name,
        params: &[("...", "any")],
        returns: "",
        doc,
        make,
        calling: Calling::Anywhere,
        constant: false,
    };
    vec![
        entry(
            "debug",
            "Logs at debug level (shown with -v)",
            |lua, _: &ApiContext| logger(lua, tracing::Level::DEBUG).map(LuaValue::Function),
        ),
        entry("info", "Logs at info level", |lua, _: &ApiContext| {
            logger(lua, tracing::Level::INFO).map(LuaValue::Function)
        }),
        entry("warn", "Logs a warning", |lua, _: &ApiContext| {
            logger(lua, tracing::Level::WARN).map(LuaValue::Function)
        }),
        entry(
            "error",
            "Logs an error (does not raise)",
            |lua, _: &ApiContext| logger(lua, tracing::Level::ERROR).map(LuaValue::Function),
        ),
    ]
}

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
pub(crate) fn logger(lua: &Lua, level: tracing::Level) -> mlua::Result<mlua::Function> {
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
