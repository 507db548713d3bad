//! `fs`: file access confined to the configured roots (`[sandbox] fs_roots`, default the
//! working directory). Relative paths resolve against the first root; symlinks are
//! resolved before the check, so a link pointing outside a root is refused.

use super::{ApiContext, ApiFunction, Calling, failure, function};
use mlua::{Lua, LuaSerdeExt, Value as LuaValue};
use std::path::{Component, Path, PathBuf};

/// The directories tool code may touch.
#[derive(Debug, Clone)]
pub struct FsRoots {
    roots: Vec<PathBuf>,
}

impl FsRoots {
    /// Canonicalises `roots` (missing ones are dropped with a warning); empty means the
    /// working directory.
    pub fn new(roots: &[PathBuf]) -> Self {
        let wanted: Vec<PathBuf> = if roots.is_empty() {
            vec![std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))]
        } else {
            roots.to_vec()
        };
        let roots = wanted
            .iter()
            .filter_map(|root| match root.canonicalize() {
                Ok(path) => Some(path),
                Err(e) => {
                    tracing::warn!("[sandbox] fs_roots: {} is unusable: {e}", root.display());
                    None
                }
            })
            .collect();
        Self { roots }
    }

    /// Resolves `path` to an absolute path inside a root, or says why not. `must_exist`
    /// false allows a new file whose parent directory exists.
    pub fn resolve(&self, path: &str, must_exist: bool) -> Result<PathBuf, String> {
        let Some(base) = self.roots.first() else {
            return Err("no filesystem roots are configured".to_string());
        };
        let given = Path::new(path);
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            base.join(given)
        };
        let resolved = match joined.canonicalize() {
            Ok(p) => p,
            Err(e) if must_exist => return Err(format!("'{path}': {e}")),
            Err(_) => {
                let name = match joined.components().next_back() {
                    Some(Component::Normal(name)) => name.to_owned(),
                    _ => return Err(format!("'{path}' does not name a file")),
                };
                let parent = joined.parent().unwrap_or(base);
                let parent = parent
                    .canonicalize()
                    .map_err(|e| format!("'{path}': parent directory: {e}"))?;
                parent.join(name)
            }
        };
        if self.roots.iter().any(|root| resolved.starts_with(root)) {
            Ok(resolved)
        } else {
            Err(format!("'{path}' is outside the allowed roots"))
        }
    }
}

/// Largest file `fs.read` returns and `fs.grep` searches.
const MAX_READ_BYTES: u64 = 64 * 1024 * 1024;
/// Most paths `fs.glob` returns.
const MAX_GLOB_RESULTS: usize = 10_000;
/// Most files `fs.glob`/`fs.grep` look at.
const MAX_WALKED: usize = 200_000;
/// Most matches `fs.grep` returns.
const MAX_GREP_MATCHES: usize = 1_000;
/// Files larger than this are skipped by `fs.grep`.
const MAX_GREP_FILE_BYTES: u64 = 4 * 1024 * 1024;

fn refuse(function: &str, reason: impl std::fmt::Display) -> mlua::Error {
    failure("fs", function, reason)
}

fn read_checked(roots: &FsRoots, path: &str) -> mlua::Result<Vec<u8>> {
    let full = roots.resolve(path, true).map_err(|e| refuse("read", e))?;
    let meta = std::fs::metadata(&full).map_err(|e| refuse("read", format!("'{path}': {e}")))?;
    if !meta.is_file() {
        return Err(refuse("read", format!("'{path}' is not a file")));
    }
    if meta.len() > MAX_READ_BYTES {
        return Err(refuse(
            "read",
            format!(
                "'{path}' is {} bytes, more than the 64 MiB limit",
                meta.len()
            ),
        ));
    }
    std::fs::read(&full).map_err(|e| refuse("read", format!("'{path}': {e}")))
}

/// A glob pattern (`*`, `**`, `?`, `[...]`) as an anchored regex over `/`-separated paths.
fn glob_regex(pattern: &str) -> Result<regex::Regex, String> {
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
    regex::Regex::new(&out).map_err(|e| format!("bad pattern '{pattern}': {e}"))
}

/// Files under `base` (inside the roots), as paths relative to `base`, in sorted order.
fn walk_files(base: &Path, mut visit: impl FnMut(&Path, &str) -> bool) {
    let walker = walkdir::WalkDir::new(base)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file())
        .take(MAX_WALKED);
    for entry in walker {
        let Ok(relative) = entry.path().strip_prefix(base) else {
            continue;
        };
        let relative = relative.to_string_lossy().replace('\\', "/");
        if !visit(entry.path(), &relative) {
            break;
        }
    }
}

/// The `fs` entries of the host API.
pub fn functions() -> Vec<ApiFunction> {
    vec![
        ApiFunction {
            module: "fs",
            name: "read",
            params: &[("path", "string")],
            returns: "string",
            doc: "The file's contents (at most 64 MiB); raises for paths outside the roots",
            make: |lua, ctx: &ApiContext| {
                let roots = ctx.fs_roots.clone();
                function(lua, move |lua, path: String| {
                    lua.create_string(read_checked(&roots, &path)?)
                })
            },
            calling: Calling::AsyncInHandler(|lua, ctx: &ApiContext| {
                let roots = ctx.fs_roots.clone();
                lua.create_async_function(move |lua, path: String| {
                    let roots = roots.clone();
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
            doc: "Writes (replaces) a file whose directory exists inside the roots",
            make: |lua, ctx: &ApiContext| {
                let roots = ctx.fs_roots.clone();
                function(lua, move |_, (path, text): (String, mlua::LuaString)| {
                    let full = roots
                        .resolve(&path, false)
                        .map_err(|e| refuse("write", e))?;
                    std::fs::write(&full, text.as_bytes())
                        .map_err(|e| refuse("write", format!("'{path}': {e}")))?;
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
                let roots = ctx.fs_roots.clone();
                function(lua, move |_, path: String| {
                    Ok(roots.resolve(&path, true).is_ok())
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

fn make_list(lua: &Lua, ctx: &ApiContext) -> mlua::Result<LuaValue> {
    let roots = ctx.fs_roots.clone();
    function(lua, move |lua, path: Option<String>| {
        let path = path.unwrap_or_else(|| ".".to_string());
        let full = roots.resolve(&path, true).map_err(|e| refuse("list", e))?;
        let mut entries: Vec<(String, &'static str, u64)> = std::fs::read_dir(&full)
            .map_err(|e| refuse("list", format!("'{path}': {e}")))?
            .filter_map(|entry| entry.ok())
            .map(|entry| {
                let meta = entry.metadata().ok();
                let kind = match &meta {
                    Some(m) if m.is_dir() => "dir",
                    Some(m) if m.is_file() => "file",
                    _ => "other",
                };
                let size = meta.map(|m| m.len()).unwrap_or(0);
                (entry.file_name().to_string_lossy().into_owned(), kind, size)
            })
            .collect();
        entries.sort();
        let list = lua.create_table_with_capacity(entries.len(), 0)?;
        for (i, (name, kind, size)) in entries.into_iter().enumerate() {
            let item = lua.create_table_with_capacity(0, 3)?;
            item.set("name", name)?;
            item.set("type", kind)?;
            item.set("size", size)?;
            list.raw_seti(i + 1, item)?;
        }
        Ok(list)
    })
}

fn make_glob(lua: &Lua, ctx: &ApiContext) -> mlua::Result<LuaValue> {
    let roots = ctx.fs_roots.clone();
    function(
        lua,
        move |lua, (pattern, path): (String, Option<String>)| {
            let path = path.unwrap_or_else(|| ".".to_string());
            let base = roots.resolve(&path, true).map_err(|e| refuse("glob", e))?;
            let matcher = glob_regex(&pattern).map_err(|e| refuse("glob", e))?;
            let mut found = Vec::new();
            walk_files(&base, |_, relative| {
                if matcher.is_match(relative) {
                    found.push(relative.to_string());
                }
                found.len() < MAX_GLOB_RESULTS
            });
            let list = lua.create_sequence_from(found)?;
            list.set_metatable(Some(lua.array_metatable()))?;
            Ok(list)
        },
    )
}

fn make_grep(lua: &Lua, ctx: &ApiContext) -> mlua::Result<LuaValue> {
    let roots = ctx.fs_roots.clone();
    function(
        lua,
        move |lua, (pattern, path, glob): (String, Option<String>, Option<String>)| {
            let path = path.unwrap_or_else(|| ".".to_string());
            let target = roots.resolve(&path, true).map_err(|e| refuse("grep", e))?;
            let matcher = regex::Regex::new(&pattern)
                .map_err(|e| refuse("grep", format!("bad regex: {e}")))?;
            let filter = glob
                .as_deref()
                .map(glob_regex)
                .transpose()
                .map_err(|e| refuse("grep", e))?;
            let mut matches: Vec<(String, usize, String)> = Vec::new();
            let mut search = |file: &Path, shown: &str| -> bool {
                let too_big =
                    std::fs::metadata(file).map_or(true, |m| m.len() > MAX_GREP_FILE_BYTES);
                let Ok(bytes) = (if too_big {
                    Err(())
                } else {
                    std::fs::read(file).map_err(|_| ())
                }) else {
                    return true;
                };
                // Binary files (a NUL byte early on) are skipped.
                if bytes.iter().take(8192).any(|&b| b == 0) {
                    return true;
                }
                let text = String::from_utf8_lossy(&bytes);
                for (number, line) in text.lines().enumerate() {
                    if matcher.is_match(line) {
                        matches.push((shown.to_string(), number + 1, line.to_string()));
                        if matches.len() >= MAX_GREP_MATCHES {
                            return false;
                        }
                    }
                }
                true
            };
            if target.is_file() {
                search(&target, &path);
            } else {
                walk_files(&target, |file, relative| {
                    if filter.as_ref().is_some_and(|f| !f.is_match(relative)) {
                        return true;
                    }
                    search(file, relative)
                });
            }
            let list = lua.create_table_with_capacity(matches.len(), 0)?;
            for (i, (file, number, text)) in matches.into_iter().enumerate() {
                let item = lua.create_table_with_capacity(0, 3)?;
                item.set("path", file)?;
                item.set("line", number)?;
                item.set("text", text)?;
                list.raw_seti(i + 1, item)?;
            }
            list.set_metatable(Some(lua.array_metatable()))?;
            Ok(list)
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
        let roots = FsRoots::new(&[dir.path().to_path_buf()]);
        assert!(roots.resolve("a.txt", true).is_ok());
        assert!(roots.resolve("new.txt", false).is_ok());
        assert!(roots.resolve("../a.txt", true).is_err());
        assert!(roots.resolve("/etc/passwd", true).is_err());
        assert!(glob_regex("**/*.lua").unwrap().is_match("a/b/c.lua"));
        assert!(glob_regex("**/*.lua").unwrap().is_match("c.lua"));
        assert!(!glob_regex("*.lua").unwrap().is_match("a/c.lua"));
        assert!(glob_regex("src/[a-c]?.rs").unwrap().is_match("src/b1.rs"));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/etc", dir.path().join("out")).unwrap();
            let err = roots.resolve("out/passwd", true).unwrap_err();
            assert!(err.contains("outside the allowed roots"), "{err}");
        }
    }
}
