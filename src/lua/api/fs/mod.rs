//! `fs`: file access confined to the configured roots (`[sandbox] fs_roots`, default the
//! working directory). Relative paths resolve against the first root. Every access goes
//! through a capability handle of its root ([`crate::fs_roots`]), so no symlink or race
//! leads outside it; writes never follow a final-component symlink; non-regular files are
//! refused.
//! Walking functions ([`walk`]) stop at the call's deadline.

mod walk;

use crate::fs_roots::FsRoots;

use super::{ApiContext, ApiFunction, Calling, failure, function};
pub(crate) use crate::fs_roots::describe;
use crate::fs_roots::{Resolved, open_regular_read, open_regular_read_in, open_regular_write};
use crate::lua::call::clock::current_deadline;
use crate::lua::call::current;
use cap_std::fs::Dir;
use mlua::{Lua, LuaSerdeExt, Value as LuaValue};
use serde::Serialize;
use std::io::{Read, Write};
use std::path::Path;
use std::time::Instant;
use walk::{Flow, deadline_message, passed, walk_files};

/// Largest file `fs.read` returns.
const MAX_READ_BYTES: u64 = 64 * 1024 * 1024;
/// Most paths `fs.glob` returns.
const MAX_GLOB_RESULTS: usize = 10_000;
/// Most matches `fs.grep` returns.
const MAX_GREP_MATCHES: usize = 1_000;
/// Files larger than this are skipped by `fs.grep`.
const MAX_GREP_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// `fs.grep` matches at most this many bytes of each line (the rest of a longer line is
/// not searched): one huge line cannot make a model-chosen regex run for long.
pub(crate) const MAX_GREP_LINE_BYTES: usize = 16 * 1024;
/// Compiled-size limit of a `fs.grep` regex.
const MAX_REGEX_BYTES: usize = 1024 * 1024;

fn refuse(function: &str, reason: impl std::fmt::Display) -> mlua::Error {
    failure("fs", function, reason)
}

fn read_checked(roots: &FsRoots, path: &str) -> mlua::Result<Vec<u8>> {
    let at = roots.resolve(path).map_err(|e| refuse("read", e))?;
    let file = open_regular_read(&at, path).map_err(|e| refuse("read", e))?;
    let mut bytes = Vec::new();
    file.take(MAX_READ_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refuse("read", describe(path, &e)))?;
    if bytes.len() as u64 > MAX_READ_BYTES {
        return Err(refuse(
            "read",
            format!("'{path}' is more than the 64 MiB limit"),
        ));
    }
    Ok(bytes)
}

fn write_checked(roots: &FsRoots, path: &str, text: &[u8]) -> mlua::Result<()> {
    let at = roots.resolve(path).map_err(|e| refuse("write", e))?;
    let mut file = open_regular_write(&at, path).map_err(|e| refuse("write", e))?;
    file.set_len(0)
        .and_then(|()| file.write_all(text))
        .map_err(|e| refuse("write", describe(path, &e)))
}

/// The directory `at` names, opened through its root's handle.
fn open_dir(function: &str, at: &Resolved<'_>, shown: &str) -> mlua::Result<Dir> {
    at.root
        .dir
        .open_dir(&at.relative)
        .map_err(|e| refuse(function, describe(shown, &e)))
}

/// The call ran out of time inside `fs.FUNCTION`: it ends as a timeout.
fn stop_at_deadline(lua: &Lua, function: &str) -> mlua::Error {
    crate::lua::call::clock::trip(lua);
    refuse(function, deadline_message())
}

/// A glob pattern that does not make a regex (an unclosed or reversed class, …).
#[derive(Debug, thiserror::Error)]
#[error("bad pattern '{pattern}': {source}")]
struct BadGlob {
    pattern: String,
    source: regex::Error,
}

/// A glob pattern (`*`, `**`, `?`, `[...]`) as an anchored regex over `/`-separated paths.
fn glob_regex(pattern: &str) -> Result<regex::Regex, BadGlob> {
    let mut out = String::from("^");
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' if chars.get(i + 1) == Some(&'*') => {
                // `**/` matches any number of directories, `**` anything.
                if chars.get(i + 2) == Some(&'/') {
                    out.push_str("(?:.*/)?");
                    i += 3;
                } else {
                    out.push_str(".*");
                    i += 2;
                }
                continue;
            }
            '*' => out.push_str("[^/]*"),
            '?' => out.push_str("[^/]"),
            '[' => {
                let close = chars[i + 1..].iter().position(|&c| c == ']');
                match close {
                    Some(offset) => {
                        let class: String = chars[i + 1..i + 1 + offset].iter().collect();
                        let class = class.replacen('!', "^", 1);
                        out.push('[');
                        out.push_str(&class.replace('\\', "\\\\"));
                        out.push(']');
                        i += offset + 2;
                        continue;
                    }
                    None => out.push_str("\\["),
                }
            }
            c => out.push_str(&regex::escape(&c.to_string())),
        }
        i += 1;
    }
    out.push('$');
    regex::Regex::new(&out).map_err(|source| BadGlob {
        pattern: pattern.to_string(),
        source,
    })
}

/// The `fs` entries of the host API.
pub(crate) fn functions() -> Vec<ApiFunction> {
    vec![
        ApiFunction {
            module: "fs",
            name: "read",
            params: &[("path", "string")],
            returns: "string",
            doc: "The file's contents (at most 64 MiB); raises for paths outside the roots",
            make: |lua, ctx: &ApiContext| {
                let default_roots = ctx.fs_roots.clone();
                function(lua, move |lua, path: String| {
                    let roots = current::fs_roots(lua, &default_roots);
                    lua.create_string(read_checked(&roots, &path)?)
                })
            },
            calling: Calling::AsyncInHandler(|lua, ctx: &ApiContext| {
                let default_roots = ctx.fs_roots.clone();
                lua.create_async_function(move |lua, path: String| {
                    let roots = current::fs_roots(&lua, &default_roots);
                    async move {
                        let bytes =
                            tokio::task::spawn_blocking(move || read_checked(&roots, &path))
                                .await
                                .map_err(|e| refuse("read", e))??;
                        lua.create_string(bytes)
                    }
                })
                .map(LuaValue::Function)
            }),
            constant: false,
        },
        ApiFunction {
            module: "fs",
            name: "write",
            params: &[("path", "string"), ("text", "string")],
            returns: "boolean",
            doc: "Writes (replaces) a regular file whose directory exists inside the roots; never follows a symlink at the path itself",
            make: |lua, ctx: &ApiContext| {
                let default_roots = ctx.fs_roots.clone();
                function(lua, move |lua, (path, text): (String, mlua::LuaString)| {
                    let roots = current::fs_roots(lua, &default_roots);
                    write_checked(&roots, &path, &text.as_bytes())?;
                    Ok(true)
                })
            },
            calling: Calling::Anywhere,
            constant: false,
        },
        ApiFunction {
            module: "fs",
            name: "mkdir",
            params: &[("path", "string")],
            returns: "boolean",
            doc: "Creates a directory and any missing parents inside the roots (true if it already existed too)",
            make: |lua, ctx: &ApiContext| {
                let default_roots = ctx.fs_roots.clone();
                function(lua, move |lua, path: String| {
                    let roots = current::fs_roots(lua, &default_roots);
                    let at = roots.resolve(&path).map_err(|e| refuse("mkdir", e))?;
                    at.root
                        .dir
                        .create_dir_all(&at.relative)
                        .map_err(|e| refuse("mkdir", describe(&path, &e)))?;
                    Ok(true)
                })
            },
            calling: Calling::Anywhere,
            constant: false,
        },
        ApiFunction {
            module: "fs",
            name: "exists",
            params: &[("path", "string")],
            returns: "boolean",
            doc: "True when the path exists inside the roots",
            make: |lua, ctx: &ApiContext| {
                let default_roots = ctx.fs_roots.clone();
                function(lua, move |lua, path: String| {
                    let roots = current::fs_roots(lua, &default_roots);
                    Ok(roots
                        .resolve(&path)
                        .is_ok_and(|at| at.root.dir.metadata(&at.relative).is_ok()))
                })
            },
            calling: Calling::Anywhere,
            constant: false,
        },
        ApiFunction {
            module: "fs",
            name: "roots",
            params: &[],
            returns: "string[]",
            doc: "The absolute paths of the roots this call may use, in order (relative paths resolve against the first)",
            make: |lua, ctx: &ApiContext| {
                let default_roots = ctx.fs_roots.clone();
                function(lua, move |lua, ()| {
                    let roots = current::fs_roots(lua, &default_roots);
                    let paths: Vec<String> = roots
                        .paths()
                        .iter()
                        .map(|p| p.to_string_lossy().into_owned())
                        .collect();
                    lua.to_value(&paths)
                })
            },
            calling: Calling::Anywhere,
            constant: false,
        },
        ApiFunction {
            module: "fs",
            name: "list",
            params: &[("path?", "string")],
            returns: "{name: string, type: 'file'|'dir'|'other', size: integer}[]",
            doc: "The entries of a directory (default: the first root), sorted by name",
            make: make_list,
            calling: Calling::Anywhere,
            constant: false,
        },
        ApiFunction {
            module: "fs",
            name: "glob",
            params: &[("pattern", "string"), ("path?", "string")],
            returns: "string[]",
            doc: "Files under path (default: the first root) matching a glob (`*`, `**`, `?`, `[...]`), as paths relative to it",
            make: make_glob,
            calling: Calling::Anywhere,
            constant: false,
        },
        ApiFunction {
            module: "fs",
            name: "grep",
            params: &[
                ("pattern", "string"),
                ("path?", "string"),
                ("glob?", "string"),
            ],
            returns: "{path: string, line: integer, text: string}[]",
            doc: "Lines matching a regex in the files under path (or in one file), at most 1,000 matches",
            make: make_grep,
            calling: Calling::Anywhere,
            constant: false,
        },
    ]
}

/// One entry of `fs.list` (a Lua array of these, through mlua's serializer).
#[derive(Serialize)]
struct ListEntry {
    name: String,
    #[serde(rename = "type")]
    kind: &'static str,
    size: u64,
}

impl ListEntry {
    /// The entry as listed; not followed, so a symlink is "other".
    fn of(entry: &cap_std::fs::DirEntry) -> Self {
        let meta = entry.metadata().ok();
        let kind = match &meta {
            Some(m) if m.is_dir() => "dir",
            Some(m) if m.is_file() => "file",
            _ => "other",
        };
        Self {
            name: entry.file_name().to_string_lossy().into_owned(),
            kind,
            size: meta.map(|m| m.len()).unwrap_or(0),
        }
    }
}

/// One match of `fs.grep`.
#[derive(Serialize)]
struct GrepMatch {
    path: String,
    line: usize,
    text: String,
}

fn make_list(lua: &Lua, ctx: &ApiContext) -> mlua::Result<LuaValue> {
    let default_roots = ctx.fs_roots.clone();
    function(lua, move |lua, path: Option<String>| {
        let roots = current::fs_roots(lua, &default_roots);
        let path = path.unwrap_or_else(|| ".".to_string());
        let at = roots.resolve(&path).map_err(|e| refuse("list", e))?;
        let dir = open_dir("list", &at, &path)?;
        let deadline = current_deadline(lua);
        let mut entries: Vec<ListEntry> = Vec::new();
        for entry in dir
            .entries()
            .map_err(|e| refuse("list", describe(&path, &e)))?
            .filter_map(|entry| entry.ok())
        {
            if entries.len().is_multiple_of(1024) && passed(deadline) {
                return Err(stop_at_deadline(lua, "list"));
            }
            entries.push(ListEntry::of(&entry));
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        lua.to_value(&entries)
    })
}

fn make_glob(lua: &Lua, ctx: &ApiContext) -> mlua::Result<LuaValue> {
    let default_roots = ctx.fs_roots.clone();
    function(
        lua,
        move |lua, (pattern, path): (String, Option<String>)| {
            let roots = current::fs_roots(lua, &default_roots);
            let path = path.unwrap_or_else(|| ".".to_string());
            let at = roots.resolve(&path).map_err(|e| refuse("glob", e))?;
            let matcher = glob_regex(&pattern).map_err(|e| refuse("glob", e))?;
            let base = open_dir("glob", &at, &path)?;
            let mut found = Vec::new();
            walk_files(base, current_deadline(lua), |_, _, relative| {
                if matcher.is_match(relative) {
                    found.push(relative.to_string());
                }
                match found.len() < MAX_GLOB_RESULTS {
                    true => Flow::Continue,
                    false => Flow::Stop,
                }
            })
            .map_err(|_| stop_at_deadline(lua, "glob"))?;
            let list = lua.create_sequence_from(found)?;
            list.set_metatable(Some(lua.array_metatable()))?;
            Ok(list)
        },
    )
}

/// Searches one open file line by line (at most [`MAX_GREP_LINE_BYTES`] of each line),
/// adding matches; false when the match limit is reached.
fn grep_file(
    file: cap_std::fs::File,
    shown: &str,
    matcher: &regex::Regex,
    deadline: Option<Instant>,
    matches: &mut Vec<GrepMatch>,
) -> Result<bool, walk::DeadlinePassed> {
    let mut bytes = Vec::new();
    if file
        .take(MAX_GREP_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .is_err()
        || bytes.len() as u64 > MAX_GREP_FILE_BYTES
    {
        return Ok(true);
    }
    // Binary files (a NUL byte early on) are skipped.
    if bytes.iter().take(8192).any(|&b| b == 0) {
        return Ok(true);
    }
    let text = String::from_utf8_lossy(&bytes);
    for (number, line) in text.lines().enumerate() {
        if number % 256 == 0 && passed(deadline) {
            return Err(walk::DeadlinePassed);
        }
        let scanned = prefix_of(line, MAX_GREP_LINE_BYTES);
        if matcher.is_match(scanned) {
            matches.push(GrepMatch {
                path: shown.to_string(),
                line: number + 1,
                text: line.to_string(),
            });
            if matches.len() >= MAX_GREP_MATCHES {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// At most `limit` bytes of `line`, cut at a character boundary.
fn prefix_of(line: &str, limit: usize) -> &str {
    if line.len() <= limit {
        return line;
    }
    let mut end = limit;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}

fn make_grep(lua: &Lua, ctx: &ApiContext) -> mlua::Result<LuaValue> {
    let default_roots = ctx.fs_roots.clone();
    function(
        lua,
        move |lua, (pattern, path, glob): (String, Option<String>, Option<String>)| {
            let roots = current::fs_roots(lua, &default_roots);
            let path = path.unwrap_or_else(|| ".".to_string());
            let at = roots.resolve(&path).map_err(|e| refuse("grep", e))?;
            let matcher = regex::RegexBuilder::new(&pattern)
                .size_limit(MAX_REGEX_BYTES)
                .build()
                .map_err(|e| refuse("grep", format!("bad regex: {e}")))?;
            let filter = glob
                .as_deref()
                .map(glob_regex)
                .transpose()
                .map_err(|e| refuse("grep", e))?;
            let deadline = current_deadline(lua);
            let mut matches: Vec<GrepMatch> = Vec::new();
            let is_dir = at
                .root
                .dir
                .metadata(&at.relative)
                .is_ok_and(|meta| meta.is_dir());
            let outcome = if is_dir {
                let base = open_dir("grep", &at, &path)?;
                let mut stopped = false;
                walk_files(base, deadline, |dir, name, relative| {
                    if filter.as_ref().is_some_and(|f| !f.is_match(relative)) {
                        return Flow::Continue;
                    }
                    let Ok(file) = open_regular_read_in(dir, Path::new(name), relative) else {
                        return Flow::Continue;
                    };
                    match grep_file(file, relative, &matcher, deadline, &mut matches) {
                        Ok(true) => Flow::Continue,
                        Ok(false) => Flow::Stop,
                        Err(_) => {
                            stopped = true;
                            Flow::Stop
                        }
                    }
                })
                .and(if stopped {
                    Err(walk::DeadlinePassed)
                } else {
                    Ok(())
                })
            } else {
                let file = open_regular_read(&at, &path).map_err(|e| refuse("grep", e))?;
                grep_file(file, &path, &matcher, deadline, &mut matches).map(|_| ())
            };
            outcome.map_err(|_| stop_at_deadline(lua, "grep"))?;
            lua.to_value(&matches)
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_paths_outside_the_roots() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "x").unwrap();
        let roots = FsRoots::new(Some(&[dir.path().to_path_buf()]));
        assert!(read_checked(&roots, "a.txt").is_ok());
        assert!(write_checked(&roots, "new.txt", b"y").is_ok());
        assert!(read_checked(&roots, "../a.txt").is_err());
        assert!(read_checked(&roots, "/etc/passwd").is_err());
        assert!(glob_regex("**/*.lua").unwrap().is_match("a/b/c.lua"));
        assert!(glob_regex("**/*.lua").unwrap().is_match("c.lua"));
        assert!(!glob_regex("*.lua").unwrap().is_match("a/c.lua"));
        assert!(glob_regex("src/[a-c]?.rs").unwrap().is_match("src/b1.rs"));
        std::os::unix::fs::symlink("/etc", dir.path().join("out")).unwrap();
        let err = read_checked(&roots, "out/passwd").unwrap_err().to_string();
        assert!(err.contains("outside the allowed roots"), "{err}");
    }
}
