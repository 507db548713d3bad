//! Turning `mlua::Error` into the one-line message an author needs (`file:line: message`).

/// The root message of a Lua error, without mlua's wrapping or the stack traceback. An
/// error raised by a Rust function (which has no Lua position of its own) is prefixed with
/// the `file:line` of the Lua code that called it, taken from the traceback.
pub(crate) fn lua_error_message(error: &mlua::Error) -> String {
    let message = strip_internal_position(&bare_message(error));
    let message = match error {
        mlua::Error::CallbackError { traceback, .. } => match first_lua_position(traceback) {
            Some(at) if !message.starts_with(&at) => format!("{at}: {message}"),
            _ => message,
        },
        _ => message,
    };
    with_sandbox_hint(collapse_repeated_position(message))
}

/// `f.lua:3: f.lua:3: boom` (a caught error raised again with `error(e)`, which adds the
/// position once more) as `f.lua:3: boom`.
fn collapse_repeated_position(mut message: String) -> String {
    loop {
        let Some(first) = position_prefix(&message) else {
            return message;
        };
        let rest = &message[first.len()..];
        if rest.starts_with(first.as_str()) {
            message = rest.to_string();
        } else {
            return message;
        }
    }
}

/// The leading `file:line: ` of a message, if it has one.
fn position_prefix(message: &str) -> Option<String> {
    let colon = message.find(": ")?;
    let head = &message[..colon];
    let (file, line) = head.rsplit_once(':')?;
    (!file.is_empty() && !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()))
        .then(|| message[..colon + 2].to_string())
}

/// What the sandbox offers instead of what a message says is missing.
const SANDBOX_HINTS: &[(&str, &str)] = &[
    (
        "(global 'io')",
        "the sandbox has no `io`; use fs.read / fs.write / fs.list",
    ),
    (
        "(field 'popen')",
        "the sandbox runs no shell; use proc.run (programs listed in [sandbox] commands)",
    ),
    (
        "(field 'execute')",
        "os.execute is not available; use proc.run (programs listed in [sandbox] commands)",
    ),
    (
        "(field 'getenv')",
        "os.getenv is not available; use env.get (names in the tool's requires_env or [sandbox] env)",
    ),
    (
        "(field 'exit')",
        "os.exit is not available; return a result or raise an error instead",
    ),
    ("(global 'debug')", "the sandbox has no `debug` library"),
    (
        "(global 'package')",
        "the sandbox has no `package`; require loads Lua modules from lib/ beside the tool files",
    ),
    (
        "(global 'dofile')",
        "the sandbox loads no files by path; put shared code in lib/ and require it",
    ),
    (
        "(global 'loadfile')",
        "the sandbox loads no files by path; put shared code in lib/ and require it",
    ),
];

/// The message with a hint appended when it is about something the sandbox removed.
fn with_sandbox_hint(message: String) -> String {
    match SANDBOX_HINTS
        .iter()
        .find(|(pattern, _)| message.contains(pattern))
    {
        Some((_, hint)) => format!("{message} — {hint}"),
        None => message,
    }
}

/// The bootstrap chunk's name (its frames are the host's glue, not a tool's code). Here,
/// below every room, because the VM names the chunk with it and the host API's `log`
/// skips its frames.
pub(crate) const BOOTSTRAP_NAME: &str = "=toolhost-bootstrap";

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

    #[test]
    fn a_position_repeated_by_rethrowing_is_shown_once() {
        assert_eq!(
            collapse_repeated_position("t.lua:3: t.lua:3: fs.read: no".to_string()),
            "t.lua:3: fs.read: no"
        );
        assert_eq!(
            collapse_repeated_position("t.lua:3: other.lua:9: boom".to_string()),
            "t.lua:3: other.lua:9: boom"
        );
    }

    #[test]
    fn what_the_sandbox_removed_says_what_to_use_instead() {
        let io = with_sandbox_hint("t.lua:2: attempt to index a nil value (global 'io')".into());
        assert!(io.ends_with("use fs.read / fs.write / fs.list"), "{io}");
        let exec =
            with_sandbox_hint("t.lua:2: attempt to call a nil value (field 'execute')".into());
        assert!(exec.contains("use proc.run"), "{exec}");
    }
}
