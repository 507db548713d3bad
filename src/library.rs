//! The shipped tool library (`tools-lua/` of the source tree), embedded in the binary at
//! build time, so an installed `toolhost` has its tools in any directory.
//!
//! Discovery, `require`, the verdict and registration caches and error messages all work on
//! files, so the library is written out once to `<cache_dir>/library/<version>-<digest>/`
//! and loaded from there as the `library` source. The folder's name changes with the
//! binary's library, so a new binary never reuses an old library's cache entries; every
//! start checks the files against the embedded bytes (a few dozen small files) and puts
//! back any that were changed, and removes files that do not belong, so what loads as
//! `library` is always what the binary carries.

use std::hash::Hasher;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// One file of the embedded library.
#[derive(Debug, Clone, Copy)]
pub struct LibraryFile {
    /// Its path inside the library, `/`-separated (`read_file.lua`, `lib/text.lua`).
    pub path: &'static str,
    /// Its bytes.
    pub contents: &'static [u8],
}

/// Every file of the library, sorted by path (written by `build.rs`).
static FILES: &[LibraryFile] = include!(concat!(env!("OUT_DIR"), "/library.rs"));

/// The files of the shipped tool library, sorted by path: tools, their `*_test.lua`,
/// `lib/` helpers and the LuaLS `types/`.
pub fn library_files() -> &'static [LibraryFile] {
    FILES
}

/// The folder name for this binary's library: its version and a digest of every path and
/// byte, so two builds with different libraries never share a folder (or cache entries).
fn folder_name() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| {
        let mut hasher = crate::digest::hasher();
        for file in FILES {
            hasher.write(file.path.as_bytes());
            hasher.write_u8(0);
            hasher.write(file.contents);
            hasher.write_u8(0);
        }
        format!("{}-{:016x}", env!("CARGO_PKG_VERSION"), hasher.finish())
    })
}

/// Writes the library out under `cache_dir` (or checks the copy there) and returns its
/// folder. Files whose bytes differ from the embedded ones are replaced (atomically: a
/// concurrent process reads the old or the new file, never half of one); files the library
/// does not have are removed.
pub(crate) fn materialize(cache_dir: &Path) -> std::io::Result<PathBuf> {
    let dir = cache_dir.join("library").join(folder_name());
    std::fs::create_dir_all(&dir)?;
    for file in FILES {
        let target = dir.join(file.path);
        if is_current(&target, file.contents) {
            continue;
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        write_atomically(&target, file.contents)?;
    }
    remove_strays(&dir)?;
    Ok(dir)
}

/// Whether `path` is a regular file holding exactly `expected`.
fn is_current(path: &Path, expected: &[u8]) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    // A link, or a file of another size, is replaced without reading it.
    if !meta.is_file() || meta.len() != expected.len() as u64 {
        return false;
    }
    std::fs::read(path).is_ok_and(|bytes| bytes == expected)
}

/// Writes `bytes` to a temp file beside `path`, read-only (the copy is the binary's, edits
/// belong in `toolhost init --with-library`'s copy), and renames it over `path`.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let parent = path.parent().unwrap_or(Path::new("."));
    let mut temp = tempfile_in(parent)?;
    temp.1.write_all(bytes)?;
    temp.1
        .set_permissions(std::fs::Permissions::from_mode(0o444))?;
    drop(temp.1);
    // A directory in the way (someone made one) is removed first: rename cannot replace it.
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        std::fs::remove_dir_all(path)?;
    }
    let renamed = std::fs::rename(&temp.0, path);
    if renamed.is_err() {
        let _ = std::fs::remove_file(&temp.0);
    }
    renamed
}

/// A new file `.NAME.PID.N.tmp` in `dir`, created exclusively.
fn tempfile_in(dir: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    loop {
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.join(format!(".library.{}.{n}.tmp", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Removes everything under `dir` that is not a library file or one of their folders (a
/// file dropped into the copy must not load as a library tool). Another process's temp
/// files are left alone.
fn remove_strays(dir: &Path) -> std::io::Result<()> {
    let expected: std::collections::HashSet<PathBuf> = FILES
        .iter()
        .flat_map(|file| {
            Path::new(file.path)
                .ancestors()
                .filter(|a| !a.as_os_str().is_empty())
                .map(Path::to_path_buf)
                .collect::<Vec<_>>()
        })
        .collect();
    let mut strays = Vec::new();
    for entry in walkdir::WalkDir::new(dir).min_depth(1).follow_links(false) {
        let entry = entry.map_err(std::io::Error::other)?;
        let Ok(relative) = entry.path().strip_prefix(dir) else {
            continue;
        };
        let name = entry.file_name().to_string_lossy();
        let in_flight = name.starts_with(".library.") && name.ends_with(".tmp");
        if !in_flight && !expected.contains(relative) {
            strays.push((entry.path().to_path_buf(), entry.file_type().is_dir()));
        }
    }
    // Deepest first, and a folder removed whole makes its entries' removal moot.
    strays.reverse();
    for (path, is_dir) in strays {
        let removed = match is_dir {
            true => std::fs::remove_dir_all(&path),
            false => std::fs::remove_file(&path),
        };
        match removed {
            Err(e) if e.kind() != ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_holds_the_shipped_tools_and_helpers() {
        let paths: Vec<&str> = library_files().iter().map(|f| f.path).collect();
        for expected in ["read_file.lua", "read_file_test.lua", "lib/text.lua"] {
            assert!(paths.contains(&expected), "{expected} missing: {paths:?}");
        }
        let mut sorted = paths.clone();
        sorted.sort();
        assert_eq!(paths, sorted);
    }

    #[test]
    fn a_changed_or_extra_file_in_the_copy_is_put_right_on_the_next_start() {
        let cache = tempfile::tempdir().unwrap();
        let dir = materialize(cache.path()).unwrap();
        let tool = dir.join("echo.lua");
        std::fs::remove_file(&tool).unwrap();
        std::fs::write(&tool, "registry.register{ name = 'evil' }").unwrap();
        std::fs::write(dir.join("planted.lua"), "-- not ours").unwrap();
        std::fs::create_dir_all(dir.join("pkg")).unwrap();
        std::fs::write(dir.join("pkg/tool.lua"), "-- not ours").unwrap();
        assert_eq!(materialize(cache.path()).unwrap(), dir);
        let shipped = library_files()
            .iter()
            .find(|f| f.path == "echo.lua")
            .unwrap();
        assert_eq!(std::fs::read(&tool).unwrap(), shipped.contents);
        assert!(!dir.join("planted.lua").exists());
        assert!(!dir.join("pkg").exists());
    }
}
