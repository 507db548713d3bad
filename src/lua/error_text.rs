//! Turning `mlua::Error` into the one-line message an author needs (`file:line: message`).

/// The root message of a Lua error, without mlua's wrapping or the stack traceback. An
/// error raised by a Rust function (which has no Lua position of its own) is prefixed with
/// the `file:line` of the Lua code that called it, taken from the traceback.
pub(crate) fn lua_error_message(error: &mlua::Error) -> String {
    let message = strip_internal_position(&bare_message(error));
    if let mlua::Error::CallbackError { traceback, .. } = error
        && let Some(at) = first_lua_position(traceback)
        && !message.starts_with(&at)
    {
        return format!("{at}: {message}");
    }
    message
}

/// Chunks of the host's own Lua (mlua's async glue, the sandbox bootstrap): positions in
/// them mean nothing to a tool author.
const INTERNAL_CHUNKS: [&str; 2] = ["__mlua_async_poll", "toolhost-bootstrap"];

/// Drops a leading `internal-chunk:LINE: ` that re-raising inside host glue added.
fn strip_internal_position(message: &str) -> String {
    for chunk in INTERNAL_CHUNKS {
        if let Some(rest) = message.strip_prefix(chunk)
            && let Some(rest) = rest.strip_prefix(':')
            && let Some(colon) = rest.find(": ")
            && rest[..colon].bytes().all(|b| b.is_ascii_digit())
        {
            return rest[colon + 2..].to_string();
        }
    }
    message.to_string()
}

/// The first `file:line` in a traceback that is tool code (not a `[C]` frame or the host's
/// own Lua).
fn first_lua_position(traceback: &str) -> Option<String> {
    traceback.lines().skip(1).find_map(|line| {
        let line = line.trim();
        if line.starts_with("[C]")
            || line.starts_with('(')
            || INTERNAL_CHUNKS.iter().any(|chunk| line.starts_with(chunk))
        {
            return None;
        }
        let mut parts = line.splitn(3, ':');
        let file = parts.next()?;
        let number = parts.next()?;
        (!file.is_empty() && !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()))
            .then(|| format!("{file}:{number}"))
    })
}

fn bare_message(error: &mlua::Error) -> String {
    let raw = match root_cause(error) {
        mlua::Error::RuntimeError(message) | mlua::Error::MemoryError(message) => message.clone(),
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        other => other.to_string(),
    };
    match raw.find("\nstack traceback:") {
        Some(cut) => raw[..cut].trim_end().to_string(),
        None => raw.trim_end().to_string(),
    }
}

/// The innermost error: what actually went wrong, behind callback and context wrappers.
pub(super) fn root_cause(error: &mlua::Error) -> &mlua::Error {
    match error {
        mlua::Error::CallbackError { cause, .. } => root_cause(cause),
        mlua::Error::WithContext { cause, .. } => root_cause(cause),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_wrappers_and_traceback() {
        let lua = mlua::Lua::new();
        let err = lua
            .load("local function f() error('boom') end f()")
            .set_name("@tools-lua/x.lua")
            .exec()
            .unwrap_err();
        assert_eq!(lua_error_message(&err), "tools-lua/x.lua:1: boom");
    }

    #[test]
    fn rust_errors_get_the_calling_lua_position() {
        let lua = mlua::Lua::new();
        let f = lua
            .create_function(|_, ()| -> mlua::Result<()> {
                Err(mlua::Error::runtime("fs.read: no"))
            })
            .unwrap();
        lua.globals().set("f", f).unwrap();
        let err = lua
            .load("local x = 1\nf()")
            .set_name("@tools-lua/x.lua")
            .exec()
            .unwrap_err();
        assert_eq!(lua_error_message(&err), "tools-lua/x.lua:2: fs.read: no");
    }
}
