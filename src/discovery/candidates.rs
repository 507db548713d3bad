//! Which files are candidates (docs/lua-api.md, docs/discovery.md): `DIR/NAME.lua` and `DIR/PKG/tool.lua`,
//! never `_`-prefixed names, never anything under `DIR/lib/` or `DIR/tests-lua/`, never a
//! test file `*_test.lua` (those are `toolhost test`'s).

use std::path::{Path, PathBuf};
use walkdir::WalkDir;

/// Largest file discovery reads.
pub(crate) const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// One candidate file.
#[derive(Debug, Clone)]
pub(super) struct Candidate {
    /// Index of the tool directory it came from.
    pub dir_index: usize,
    /// The path as found (tool dir as configured + relative path): shown in messages.
    pub shown: PathBuf,
    /// Absolute, symlink-resolved path: the cache key and the path reported.
    pub absolute: PathBuf,
    /// `DIR/PKG` for a package tool.
    pub package_dir: Option<PathBuf>,
    /// Why it will not be read (not a regular file, too large).
    pub skip: Option<String>,
    /// `(mtime_ns, size)` from the same metadata read, for the verdict cache.
    pub stamp: Option<super::cache::Stamp>,
}

impl Candidate {
    /// A candidate at `shown` whose resolved path is `absolute`; reads its metadata once.
    pub(super) fn new(
        dir_index: usize,
        shown: PathBuf,
        absolute: PathBuf,
        package_dir: Option<PathBuf>,
    ) -> Self {
        let meta = std::fs::metadata(&shown).ok();
        let skip = meta.as_ref().and_then(skip_reason);
        let stamp = meta.as_ref().and_then(super::cache::stamp_of);
        Self {
            dir_index,
            shown,
            absolute,
            package_dir,
            skip,
            stamp,
        }
    }
}

/// `NAME_test.lua`: a test file for `toolhost test`, never a tool.
pub(crate) fn is_test_file(name: &str) -> bool {
    name.ends_with("_test.lua")
}

fn hidden(name: &std::ffi::OsStr) -> bool {
    name.to_string_lossy().starts_with('_')
}

/// Lists the candidates of one tool directory, sorted by path. A missing directory has
/// none (the caller warns).
pub(super) fn list(dir: &Path, dir_index: usize) -> Vec<Candidate> {
    // Resolve the directory once; only symlinked entries and package files (whose folder
    // may be a link) need resolving on their own.
    let canonical_dir = dir.canonicalize().unwrap_or_else(|_| absolutize(dir));
    let walker = WalkDir::new(dir)
        .min_depth(1)
        .max_depth(2)
        .follow_links(true)
        // Not `sort_by_file_name`: the list is sorted once at the end, and walkdir's sort
        // took each name apart again on every comparison (a sixth of a warm start).
        .into_iter()
        .filter_entry(|entry| {
            let name = entry.file_name();
            !(entry.depth() == 1
                && entry.file_type().is_dir()
                && (name == "lib" || name == "tests-lua" || hidden(name)))
        });
    let mut out = Vec::new();
    for entry in walker {
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                // A link that cannot be followed (to itself, in a loop, or to nothing) still
                // gets a verdict when its name makes it a candidate.
                if let Some(candidate) = unresolvable(&error, dir_index) {
                    out.push(candidate);
                }
                continue;
            }
        };
        let name = entry.file_name();
        if hidden(name) {
            continue;
        }
        let is_candidate = match entry.depth() {
            1 => {
                let name = name.to_string_lossy();
                name.ends_with(".lua") && !is_test_file(&name)
            }
            _ => name == "tool.lua",
        };
        if !is_candidate {
            continue;
        }
        let shown = entry.path().to_path_buf();
        let absolute = if entry.depth() == 1 && !entry.path_is_symlink() {
            canonical_dir.join(name)
        } else {
            shown.canonicalize().unwrap_or_else(|_| absolutize(&shown))
        };
        let package_dir = (entry.depth() == 2)
            .then(|| shown.parent().map(Path::to_path_buf))
            .flatten();
        out.push(Candidate::new(dir_index, shown, absolute, package_dir));
    }
    out.sort_by_cached_key(|candidate| order_key(&candidate.shown, dir));
    out
}

/// A candidate for an entry walkdir could not follow, skipped with the reason.
fn unresolvable(error: &walkdir::Error, dir_index: usize) -> Option<Candidate> {
    let shown = error.path()?.to_path_buf();
    let name = shown.file_name()?.to_string_lossy().into_owned();
    let is_candidate = match error.depth() {
        1 => name.ends_with(".lua") && !is_test_file(&name) && !name.starts_with('_'),
        2 => name == "tool.lua",
        _ => false,
    };
    if !is_candidate {
        return None;
    }
    let why = match error.io_error() {
        Some(io) => io.to_string(),
        None => "a symlink loop".to_string(),
    };
    let package_dir = (error.depth() == 2)
        .then(|| shown.parent().map(Path::to_path_buf))
        .flatten();
    Some(Candidate {
        dir_index,
        absolute: absolutize(&shown),
        shown,
        package_dir,
        skip: Some(format!("cannot follow this link ({why})")),
        stamp: None,
    })
}

/// What candidates of one directory sort by: the path after `dir` (the same bytes for
/// all), with the separator as the lowest byte. That is `Path`'s own order (component by
/// component) for the names a directory listing gives, without taking both paths apart on
/// every comparison (which was a tenth of a warm start).
fn order_key(shown: &Path, dir: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let full = shown.as_os_str().as_bytes();
    let prefix = dir.as_os_str().as_bytes();
    let inside = full.strip_prefix(prefix).unwrap_or(full);
    inside
        .iter()
        .map(|&byte| if byte == b'/' { 0 } else { byte })
        .collect()
}

/// Why a candidate must not be read: not a regular file (a FIFO would block), or too large.
/// Unreadable metadata is not a skip: reading fails too, with a `read_error` verdict.
fn skip_reason(meta: &std::fs::Metadata) -> Option<String> {
    if !meta.is_file() {
        Some("not a regular file".to_string())
    } else if meta.len() > MAX_FILE_BYTES {
        Some(format!(
            "{} bytes is larger than the 16 MiB limit",
            meta.len()
        ))
    } else {
        None
    }
}

/// `path` made absolute against the working directory without touching the filesystem.
pub(crate) fn absolutize(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|cwd| cwd.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_tools_and_packages_but_not_lib_or_underscores() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for file in [
            "a.lua",
            "_hidden.lua",
            "notes.txt",
            "lib/util.lua",
            "pkg/tool.lua",
            "pkg/helper.lua",
            "_pkg/tool.lua",
            "deep/x/tool.lua",
        ] {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "-- x").unwrap();
        }
        let names: Vec<String> = list(root, 0)
            .iter()
            .map(|c| c.shown.strip_prefix(root).unwrap().display().to_string())
            .collect();
        assert_eq!(names, ["a.lua", "pkg/tool.lua"]);
    }

    #[test]
    fn candidates_sort_in_path_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for file in [
            "a.lua",
            "a/tool.lua",
            "a-b.lua",
            "b.lua",
            "B.lua",
            "a_/tool.lua",
        ] {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "-- x").unwrap();
        }
        let listed: Vec<PathBuf> = list(root, 0).into_iter().map(|c| c.shown).collect();
        let mut by_path = listed.clone();
        by_path.sort();
        assert_eq!(listed, by_path);
        assert_eq!(listed.len(), 6);
    }

    #[test]
    fn links_that_cannot_be_followed_are_skipped_candidates() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::os::unix::fs::symlink(root.join("self.lua"), root.join("self.lua")).unwrap();
        std::os::unix::fs::symlink(root.join("nowhere"), root.join("dangling.lua")).unwrap();
        std::os::unix::fs::symlink(root.join("nowhere"), root.join("_hidden.lua")).unwrap();
        let listed = list(root, 0);
        let names: Vec<(String, Option<String>)> = listed
            .iter()
            .map(|c| {
                let name = c.shown.strip_prefix(root).unwrap().display().to_string();
                (name, c.skip.clone())
            })
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        for (name, skip) in &names {
            assert!(
                skip.as_deref()
                    .is_some_and(|s| s.starts_with("cannot follow this link")),
                "{name}: {skip:?}"
            );
        }
    }
}
