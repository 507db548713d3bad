//! `log`: tracing from Lua, tagged with the calling file and line; `print` logs at info
//! (stdout belongs to results and the MCP protocol).

use super::{ApiContext, ApiFunction, Calling};
use crate::lua::call::current;
use crate::lua::error_text::BOOTSTRAP_NAME;
use crate::registry::{LogLevel, LogLine};
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
            |lua, _: &ApiContext| logger(lua, LogLevel::Debug).map(LuaValue::Function),
        ),
        entry("info", "Logs at info level", |lua, _: &ApiContext| {
            logger(lua, LogLevel::Info).map(LuaValue::Function)
        }),
        entry("warn", "Logs a warning", |lua, _: &ApiContext| {
            logger(lua, LogLevel::Warning).map(LuaValue::Function)
        }),
        entry(
            "error",
            "Logs an error (does not raise)",
            |lua, _: &ApiContext| logger(lua, LogLevel::Error).map(LuaValue::Function),
        ),
    ]
}

/// Where the Lua code that called us is, as `file:line`: the nearest frame of Lua code
/// that is not the host's own glue (the bootstrap wraps every host-API function, so the
/// frame right above is that wrapper or a C function, not the tool).
fn caller(lua: &Lua) -> String {
    // Deep enough for the glue's frames; a tool's own frame is found long before.
    for level in 1..16 {
        let found = lua.inspect_stack(level, |debug| {
            let source = debug.source();
            let file = source.short_src.as_deref().unwrap_or("?");
            if source.what == "C" || source.source.as_deref() == Some(BOOTSTRAP_NAME) {
                return None;
            }
            Some(match debug.current_line() {
                Some(line) => format!("{file}:{line}"),
                None => file.to_string(),
            })
        });
        match found {
            Some(Some(at)) => return at,
            Some(None) => continue,
            None => break,
        }
    }
    String::new()
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

/// A Lua function logging its arguments at `level`, tagged with the caller's position; during
/// a call with an observer (an MCP client) the line also goes to the observer.
pub(crate) fn logger(lua: &Lua, level: LogLevel) -> mlua::Result<mlua::Function> {
    lua.create_function(move |lua, args: MultiValue| {
        let at = caller(lua);
        let text = join(lua, args)?;
        match level {
            LogLevel::Error => tracing::error!(target: "toolhost::lua", at = %at, "{text}"),
            LogLevel::Warning => tracing::warn!(target: "toolhost::lua", at = %at, "{text}"),
            LogLevel::Info => tracing::info!(target: "toolhost::lua", at = %at, "{text}"),
            _ => tracing::debug!(target: "toolhost::lua", at = %at, "{text}"),
        }
        current::log(lua, |tool| LogLine {
            level,
            tool: tool.to_string(),
            at,
            message: text,
        });
        Ok(())
    })
}
