//! `fs`: file access confined to the configured roots (`[sandbox] fs_roots`, default the
//! working directory). Relative paths resolve against the first root; symlinks are
//! resolved before the check, so a link pointing outside a root is refused.

use mlua::{Lua, Table};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

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

fn refuse(function: &str, reason: impl std::fmt::Display) -> mlua::Error {
    mlua::Error::runtime(format!("fs.{function}: {reason}"))
}

/// Builds the `fs` table (`read`, `write`, `list`, `exists`).
pub fn install(lua: &Lua, roots: Arc<FsRoots>) -> mlua::Result<Table> {
    let fs = lua.create_table()?;
    let r = roots.clone();
    fs.set(
        "read",
        lua.create_function(move |lua, path: String| {
            let full = r.resolve(&path, true).map_err(|e| refuse("read", e))?;
            let bytes =
                std::fs::read(&full).map_err(|e| refuse("read", format!("'{path}': {e}")))?;
            lua.create_string(bytes)
        })?,
    )?;
    let r = roots.clone();
    fs.set(
        "write",
        lua.create_function(move |_, (path, text): (String, mlua::LuaString)| {
            let full = r.resolve(&path, false).map_err(|e| refuse("write", e))?;
            std::fs::write(&full, text.as_bytes())
                .map_err(|e| refuse("write", format!("'{path}': {e}")))?;
            Ok(true)
        })?,
    )?;
    let r = roots.clone();
    fs.set(
        "exists",
        lua.create_function(move |_, path: String| Ok(r.resolve(&path, true).is_ok()))?,
    )?;
    let r = roots;
    fs.set(
        "list",
        lua.create_function(move |lua, path: Option<String>| {
            let path = path.unwrap_or_else(|| ".".to_string());
            let full = r.resolve(&path, true).map_err(|e| refuse("list", e))?;
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
        })?,
    )?;
    Ok(fs)
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
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/etc", dir.path().join("out")).unwrap();
            let err = roots.resolve("out/passwd", true).unwrap_err();
            assert!(err.contains("outside the allowed roots"), "{err}");
        }
    }
}
