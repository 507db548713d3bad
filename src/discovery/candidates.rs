//! Which files are candidates (docs/lua-api.md, docs/discovery.md): `DIR/NAME.lua` and `DIR/PKG/tool.lua`,
//! never `_`-prefixed names, never anything under `DIR/lib/` or `DIR/tests-lua/`, never a
//! test file `*_test.lua` (those are `toolhost test`'s).

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
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
    /// For a file straight inside its tool directory (not a link): the directory's handle
    /// and the file's name, to read it by.
    pub in_dir: Option<InDir>,
}

/// A file named relative to an open directory. Statting and opening it by the handle walks
/// one path component instead of every component of the tool directory's path again: a
/// warm start does both for every tool file, and those walks were a tenth of its time.
#[derive(Debug, Clone)]
pub(crate) struct InDir {
    /// The open directory.
    pub dir: Arc<OwnedFd>,
    /// The file's name in it.
    pub name: OsString,
}

impl InDir {
    /// The file's metadata, following a link (as `std::fs::metadata` does).
    fn facts(&self) -> Option<Facts> {
        let stat = rustix::fs::statat(
            &*self.dir,
            self.name.as_os_str(),
            rustix::fs::AtFlags::empty(),
        )
        .ok()?;
        let is_file =
            rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::RegularFile;
        let len = u64::try_from(stat.st_size).ok()?;
        // The fields' integer types differ between platforms.
        #[allow(clippy::useless_conversion)]
        let stamp = u64::try_from(stat.st_mtime)
            .ok()
            .zip(u64::try_from(stat.st_mtime_nsec).ok())
            .and_then(|(secs, nanos)| secs.checked_mul(1_000_000_000)?.checked_add(nanos))
            .map(|mtime_ns| (mtime_ns, len));
        Some(Facts {
            is_file,
            len,
            stamp,
        })
    }
}

/// What discovery needs of a candidate's metadata.
struct Facts {
    is_file: bool,
    len: u64,
    /// The verdict cache's stamp (`None`: no usable modification time).
    stamp: Option<super::cache::Stamp>,
}

impl Facts {
    fn of(meta: &std::fs::Metadata) -> Self {
        Self {
            is_file: meta.is_file(),
            len: meta.len(),
            stamp: super::cache::stamp_of(meta),
        }
    }
}

impl Candidate {
    /// A candidate at `shown` whose resolved path is `absolute`; reads its metadata once.
    pub(super) fn new(
        dir_index: usize,
        shown: PathBuf,
        absolute: PathBuf,
        package_dir: Option<PathBuf>,
    ) -> Self {
        let facts = std::fs::metadata(&shown).ok().map(|meta| Facts::of(&meta));
        Self::with_facts(dir_index, shown, absolute, package_dir, facts)
    }

    /// A candidate for the file `in_dir` names (straight inside tool directory
    /// `dir_index`, shown as `shown`); reads its metadata by the directory's handle.
    fn in_dir(dir_index: usize, shown: PathBuf, absolute: PathBuf, in_dir: InDir) -> Self {
        let facts = in_dir.facts();
        Self {
            in_dir: Some(in_dir),
            ..Self::with_facts(dir_index, shown, absolute, None, facts)
        }
    }

    /// A candidate whose (link-following) metadata is already read.
    fn with_facts(
        dir_index: usize,
        shown: PathBuf,
        absolute: PathBuf,
        package_dir: Option<PathBuf>,
        facts: Option<Facts>,
    ) -> Self {
        Self {
            dir_index,
            shown,
            absolute,
            package_dir,
            skip: facts.as_ref().and_then(skip_reason),
            stamp: facts.and_then(|facts| facts.stamp),
            in_dir: None,
        }
    }

    /// The size its metadata gave (what reading it should find), when it was read.
    pub(super) fn expected_len(&self) -> Option<u64> {
        self.stamp.map(|(_, size)| size)
    }
}

/// Candidates for `texts`, written as files `f000.lua`, `f001.lua`, … in `dir`, in order
/// (the judging tests' input).
#[cfg(test)]
pub(super) fn written(dir: &Path, texts: &[impl AsRef<str>]) -> Vec<Candidate> {
    texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let path = dir.join(format!("f{i:03}.lua"));
            std::fs::write(&path, text.as_ref()).unwrap();
            Candidate::new(0, path.clone(), path, None)
        })
        .collect()
}

/// `NAME_test.lua`: a test file for `toolhost test`, never a tool.
fn is_test_file(name: &[u8]) -> bool {
    name.ends_with(b"_test.lua")
}

fn hidden(name: &std::ffi::OsStr) -> bool {
    // As bytes: every entry is asked, and a lossy copy checks its UTF-8 first.
    name.as_encoded_bytes().starts_with(b"_")
}

/// Lists the candidates of one tool directory, sorted by path. A missing directory has
/// none (the caller warns).
pub(super) fn list(dir: &Path, dir_index: usize) -> Vec<Candidate> {
    // Resolve the directory once; only symlinked entries and package files (whose folder
    // may be a link) need resolving on their own.
    let canonical_dir = dir.canonicalize().unwrap_or_else(|_| absolutize(dir));
    // A file straight inside the directory is statted and opened by this handle; without
    // one (it cannot be opened) every file is read by its path.
    let handle = rustix::fs::open(
        dir,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .ok()
    .map(Arc::new);
    let walker = WalkDir::new(dir)
        .min_depth(1)
        .max_depth(2)
        .follow_links(true)
        // Not `sort_by_file_name`: the list is sorted once at the end, and walkdir's sort
        // took each name apart again on every comparison (a sixth of a warm start).
        .into_iter()
        .filter_entry(|entry| {
            // The name last: taking it walks the path's components, and most entries are
            // files.
            !(entry.depth() == 1 && entry.file_type().is_dir() && {
                let name = entry.file_name();
                name == "lib" || name == "tests-lua" || hidden(name)
            })
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
        let name = last_name(entry.path());
        if hidden(name) || !is_candidate_name(name, entry.depth()) {
            continue;
        }
        let shown = entry.path().to_path_buf();
        let candidate = match (entry.depth(), entry.path_is_symlink(), &handle) {
            (1, false, Some(handle)) => {
                let in_dir = InDir {
                    dir: handle.clone(),
                    name: name.to_os_string(),
                };
                Candidate::in_dir(dir_index, shown, canonical_dir.join(name), in_dir)
            }
            (1, false, None) => Candidate::new(dir_index, shown, canonical_dir.join(name), None),
            (depth, ..) => {
                let absolute = shown.canonicalize().unwrap_or_else(|_| absolutize(&shown));
                let package_dir = (depth == 2)
                    .then(|| shown.parent().map(Path::to_path_buf))
                    .flatten();
                Candidate::new(dir_index, shown, absolute, package_dir)
            }
        };
        out.push(candidate);
    }
    out.sort_by_cached_key(|candidate| order_key(&candidate.shown, dir));
    out
}

/// The last part of an entry's path, its name: the bytes after the last separator
/// (`Path::file_name` takes the path apart into components, and every entry is named).
fn last_name(path: &Path) -> &std::ffi::OsStr {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    match memchr::memrchr(b'/', bytes) {
        Some(at) if at + 1 < bytes.len() => std::ffi::OsStr::from_bytes(&bytes[at + 1..]),
        _ => path.file_name().unwrap_or(path.as_os_str()),
    }
}

/// Whether an entry at `depth` is named like a candidate: `NAME.lua` at the top (not a test
/// file), `tool.lua` in a package folder.
fn is_candidate_name(name: &std::ffi::OsStr, depth: usize) -> bool {
    match depth {
        // As bytes, as `hidden`; the same answer as the text's, whatever the encoding
        // (only bytes that are not UTF-8 would change in a lossy copy).
        1 => {
            let name = name.as_encoded_bytes();
            name.ends_with(b".lua") && !is_test_file(name) && !name.starts_with(b"_")
        }
        2 => name == "tool.lua",
        _ => false,
    }
}

/// A candidate for an entry walkdir could not follow, skipped with the reason.
fn unresolvable(error: &walkdir::Error, dir_index: usize) -> Option<Candidate> {
    let shown = error.path()?.to_path_buf();
    let depth = error.depth();
    if !is_candidate_name(shown.file_name()?, depth) {
        return None;
    }
    let why = match error.io_error() {
        Some(io) => io.to_string(),
        None => "a symlink loop".to_string(),
    };
    let package_dir = (depth == 2)
        .then(|| shown.parent().map(Path::to_path_buf))
        .flatten();
    Some(Candidate {
        dir_index,
        absolute: absolutize(&shown),
        shown,
        package_dir,
        skip: Some(format!("cannot follow this link ({why})")),
        stamp: None,
        in_dir: None,
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
fn skip_reason(facts: &Facts) -> Option<String> {
    if !facts.is_file {
        Some("not a regular file".to_string())
    } else if facts.len > MAX_FILE_BYTES {
        Some(format!(
            "{} bytes is larger than the 16 MiB limit",
            facts.len
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
    fn an_entrys_name_is_what_file_name_gives() {
        for path in ["/a/b.lua", "b.lua", "tools-lua/pkg/tool.lua", "/x/", "/"] {
            let path = Path::new(path);
            assert_eq!(
                Some(last_name(path)),
                path.file_name().or(Some(path.as_os_str()))
            );
        }
    }

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

    fn names_and_skips(root: &Path) -> Vec<(String, Option<String>)> {
        list(root, 0)
            .iter()
            .map(|c| {
                let name = c.shown.strip_prefix(root).unwrap().display().to_string();
                (name, c.skip.clone())
            })
            .collect()
    }

    #[test]
    fn a_linked_tool_file_is_a_candidate_with_its_targets_stamp() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::write(elsewhere.path().join("real.lua"), "-- linked").unwrap();
        std::os::unix::fs::symlink(elsewhere.path().join("real.lua"), dir.path().join("a.lua"))
            .unwrap();
        let listed = list(dir.path(), 0);
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].expected_len(), Some("-- linked".len() as u64));
        assert_eq!(
            listed[0].absolute,
            elsewhere.path().join("real.lua").canonicalize().unwrap()
        );
    }

    #[test]
    fn a_linked_package_folder_gives_its_tool_file() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::write(elsewhere.path().join("tool.lua"), "-- pkg").unwrap();
        std::fs::write(elsewhere.path().join("helper.lua"), "-- not a tool").unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), dir.path().join("pkg")).unwrap();
        let listed = list(dir.path(), 0);
        let names: Vec<_> = names_and_skips(dir.path());
        assert_eq!(names, [("pkg/tool.lua".to_string(), None)]);
        assert_eq!(listed[0].package_dir, Some(dir.path().join("pkg")));
    }

    #[test]
    fn a_link_back_to_the_tool_directory_adds_nothing_twice() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tool.lua"), "-- x").unwrap();
        std::os::unix::fs::symlink(dir.path(), dir.path().join("again")).unwrap();
        assert_eq!(
            names_and_skips(dir.path()),
            [("tool.lua".to_string(), None)]
        );
    }

    #[test]
    fn a_linked_lib_folder_is_not_walked() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::write(elsewhere.path().join("tool.lua"), "-- x").unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), dir.path().join("lib")).unwrap();
        assert!(list(dir.path(), 0).is_empty());
    }

    #[test]
    fn a_dangling_package_tool_file_is_a_skipped_candidate() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("pkg")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("nowhere"), dir.path().join("pkg/tool.lua"))
            .unwrap();
        let names = names_and_skips(dir.path());
        assert_eq!(names.len(), 1, "{names:?}");
        assert!(
            names[0]
                .1
                .as_deref()
                .is_some_and(|s| s.starts_with("cannot follow this link")),
            "{names:?}"
        );
    }

    #[test]
    fn a_folder_named_like_a_tool_file_is_a_skipped_candidate() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("odd.lua")).unwrap();
        assert_eq!(
            names_and_skips(dir.path()),
            [(
                "odd.lua".to_string(),
                Some("not a regular file".to_string())
            )]
        );
    }

    #[test]
    fn a_file_in_the_directory_gets_the_stamp_its_path_gives() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.lua"), "-- a tool").unwrap();
        let listed = list(dir.path(), 0);
        assert!(listed[0].in_dir.is_some());
        let by_path = std::fs::metadata(dir.path().join("a.lua")).unwrap();
        assert_eq!(listed[0].stamp, crate::discovery::cache::stamp_of(&by_path));
    }
}
