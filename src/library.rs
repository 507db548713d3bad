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
///
/// `cache_dir` itself may be a symbolic link (the operator's choice of where the cache
/// lives); below it, `library/`, the version folder and every folder of the library must be
/// real directories: a link there (a repository can commit one under a project-relative
/// `cache_dir`) is removed as a link, never followed, and a real directory made in its
/// place, so writing and removing strays stay inside the real version folder.
pub(crate) fn materialize(cache_dir: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(cache_dir)?;
    let library = cache_dir.join("library");
    real_dir(&library)?;
    let dir = library.join(folder_name());
    real_dir(&dir)?;
    for file in FILES {
        let target = dir.join(file.path);
        // Every folder between the version folder and the file, outermost first.
        let mut folders: Vec<&Path> = Path::new(file.path)
            .ancestors()
            .skip(1)
            .filter(|a| !a.as_os_str().is_empty())
            .collect();
        folders.reverse();
        for folder in folders {
            real_dir(&dir.join(folder))?;
        }
        if is_current(&target, file.contents) {
            continue;
        }
        write_atomically(&target, file.contents)?;
    }
    remove_strays(&dir)?;
    Ok(dir)
}

/// Makes `path` a real directory whose parent is one already: a symbolic link or a file
/// there is removed itself (a link's target is never touched), then the directory made.
fn real_dir(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(_) => match std::fs::remove_file(path) {
            Err(e) if e.kind() != ErrorKind::NotFound => return Err(e),
            _ => {}
        },
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    match std::fs::create_dir(path) {
        // Another process made it meanwhile: it must be a real directory too.
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            if std::fs::symlink_metadata(path)?.is_dir() {
                Ok(())
            } else {
                Err(std::io::Error::other(format!(
                    "{} is not a directory",
                    path.display()
                )))
            }
        }
        other => other,
    }
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
/// files are left alone. `dir` is a real directory ([`real_dir`]); the walk follows no link
/// and a link found is removed as a link.
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
        // A link is a stray even under an expected name (only real files and folders are
        // the library's); `is_dir` is false for it, so it is removed as a file, not followed.
        let is_link = entry.path_is_symlink();
        if !in_flight && (is_link || !expected.contains(relative)) {
            strays.push((
                entry.path().to_path_buf(),
                !is_link && entry.file_type().is_dir(),
            ));
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

    #[test]
    fn a_link_as_the_version_folder_is_replaced_and_its_target_left_untouched() {
        let cache = tempfile::tempdir().unwrap();
        let victim = tempfile::tempdir().unwrap();
        std::fs::write(victim.path().join("important.txt"), "keep").unwrap();
        std::fs::create_dir(victim.path().join("sub")).unwrap();
        std::fs::create_dir(cache.path().join("library")).unwrap();
        let link = cache.path().join("library").join(folder_name());
        std::os::unix::fs::symlink(victim.path(), &link).unwrap();
        let dir = materialize(cache.path()).unwrap();
        assert!(!std::fs::symlink_metadata(&dir).unwrap().is_symlink());
        assert!(dir.join("echo.lua").is_file());
        let left: Vec<_> = std::fs::read_dir(victim.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 2, "{left:?}");
        assert_eq!(
            std::fs::read_to_string(victim.path().join("important.txt")).unwrap(),
            "keep"
        );
        assert!(victim.path().join("sub").is_dir());
    }

    #[test]
    fn a_link_as_the_library_folder_is_replaced_and_its_target_left_untouched() {
        let cache = tempfile::tempdir().unwrap();
        let victim = tempfile::tempdir().unwrap();
        let planted = victim.path().join(folder_name());
        std::fs::create_dir(&planted).unwrap();
        std::fs::write(planted.join("important.txt"), "keep").unwrap();
        std::os::unix::fs::symlink(victim.path(), cache.path().join("library")).unwrap();
        let dir = materialize(cache.path()).unwrap();
        let library = cache.path().join("library");
        assert!(std::fs::symlink_metadata(&library).unwrap().is_dir());
        assert!(dir.join("echo.lua").is_file());
        assert_eq!(
            std::fs::read_to_string(planted.join("important.txt")).unwrap(),
            "keep"
        );
        assert_eq!(std::fs::read_dir(&planted).unwrap().count(), 1);
    }

    #[test]
    fn a_link_as_a_library_subfolder_is_replaced_and_its_target_left_untouched() {
        let cache = tempfile::tempdir().unwrap();
        let victim = tempfile::tempdir().unwrap();
        std::fs::write(victim.path().join("important.txt"), "keep").unwrap();
        let dir = materialize(cache.path()).unwrap();
        std::fs::remove_dir_all(dir.join("lib")).unwrap();
        std::os::unix::fs::symlink(victim.path(), dir.join("lib")).unwrap();
        materialize(cache.path()).unwrap();
        assert!(std::fs::symlink_metadata(dir.join("lib")).unwrap().is_dir());
        assert!(dir.join("lib/text.lua").is_file());
        let left: Vec<_> = std::fs::read_dir(victim.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["important.txt"]);
    }

    #[test]
    fn a_link_inside_the_copy_is_removed_without_touching_its_target() {
        let cache = tempfile::tempdir().unwrap();
        let victim = tempfile::tempdir().unwrap();
        std::fs::write(victim.path().join("important.txt"), "keep").unwrap();
        let dir = materialize(cache.path()).unwrap();
        std::os::unix::fs::symlink(victim.path(), dir.join("planted")).unwrap();
        std::os::unix::fs::symlink(victim.path().join("important.txt"), dir.join("x.lua")).unwrap();
        materialize(cache.path()).unwrap();
        assert!(std::fs::symlink_metadata(dir.join("planted")).is_err());
        assert!(std::fs::symlink_metadata(dir.join("x.lua")).is_err());
        assert_eq!(
            std::fs::read_to_string(victim.path().join("important.txt")).unwrap(),
            "keep"
        );
    }

    #[test]
    fn a_linked_cache_dir_is_used_and_the_library_made_inside_it() {
        let real = tempfile::tempdir().unwrap();
        let parent = tempfile::tempdir().unwrap();
        let cache = parent.path().join("cache");
        std::os::unix::fs::symlink(real.path(), &cache).unwrap();
        materialize(&cache).unwrap();
        assert!(
            real.path()
                .join("library")
                .join(folder_name())
                .join("echo.lua")
                .is_file()
        );
    }
}
