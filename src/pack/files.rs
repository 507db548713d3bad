//! A pack's files and their SHA-256 digests: what `toolhost.lock` records and what every
//! load checks. Only regular files and folders may be in a pack: a symbolic link could
//! point anywhere (a tool file outside the pack, `/etc/passwd`) and change without the pack
//! changing, so a link is refused, as are FIFOs and devices. Sizes are bounded, so a
//! hostile pack cannot make the host read without end.

use super::error::PackError;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;
use walkdir::WalkDir;

/// Largest file in a pack (as large as a tool file may be).
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// Largest pack, all files together.
const MAX_PACK_BYTES: u64 = 64 * 1024 * 1024;
/// Most files in a pack.
const MAX_FILES: usize = 10_000;
/// Deepest folder nesting in a pack.
const MAX_DEPTH: usize = 32;

/// Every file under `dir` (its path relative to `dir`, `/`-separated) with its SHA-256 in
/// lowercase hex, sorted by path. Refuses links, special files, non-UTF-8 names and packs
/// over the size limits, naming the file.
pub fn hash_tree(dir: &Path) -> Result<BTreeMap<String, String>, PackError> {
    let mut out = BTreeMap::new();
    let mut total: u64 = 0;
    let walker = WalkDir::new(dir)
        .min_depth(1)
        .max_depth(MAX_DEPTH)
        .follow_links(false)
        .sort_by_file_name();
    for entry in walker {
        let entry = entry.map_err(|e| {
            let path = e.path().unwrap_or(dir).to_path_buf();
            PackError::new(path, format!("cannot read: {e}"))
        })?;
        let path = entry.path();
        let file_type = entry.file_type();
        if file_type.is_dir() {
            if entry.depth() == MAX_DEPTH {
                return Err(PackError::new(
                    path,
                    format!("folders nested deeper than {MAX_DEPTH} levels"),
                ));
            }
            continue;
        }
        if file_type.is_symlink() {
            let target = std::fs::read_link(path)
                .map(|t| t.display().to_string())
                .unwrap_or_else(|_| "?".to_string());
            return Err(PackError::new(
                path,
                format!("a symbolic link (to {target}); a pack may hold only regular files"),
            ));
        }
        if !file_type.is_file() {
            return Err(PackError::new(
                path,
                "not a regular file; a pack may hold only regular files and folders",
            ));
        }
        let relative = relative_name(dir, path)?;
        if out.len() == MAX_FILES {
            return Err(PackError::new(
                dir,
                format!("more than {MAX_FILES} files in the pack"),
            ));
        }
        let bytes = crate::bounded_read::read_regular(path, MAX_FILE_BYTES)
            .map_err(|e| PackError::new(path, format!("cannot read: {e}")))?;
        total += bytes.len() as u64;
        if total > MAX_PACK_BYTES {
            return Err(PackError::new(
                dir,
                format!(
                    "the pack is larger than {} MiB",
                    MAX_PACK_BYTES / (1024 * 1024)
                ),
            ));
        }
        out.insert(relative, hex(&Sha256::digest(&bytes)));
    }
    Ok(out)
}

/// `path` relative to `dir`, `/`-separated; a name that is not UTF-8 cannot be recorded.
fn relative_name(dir: &Path, path: &Path) -> Result<String, PackError> {
    let relative = path.strip_prefix(dir).unwrap_or(path);
    let parts: Option<Vec<&str>> = relative
        .components()
        .map(|c| c.as_os_str().to_str())
        .collect();
    parts
        .map(|parts| parts.join("/"))
        .ok_or_else(|| PackError::new(path, "the file name is not valid UTF-8"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::hash_tree;

    #[test]
    fn files_are_listed_sorted_with_their_digests() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("pkg")).unwrap();
        std::fs::write(dir.path().join("pkg/tool.lua"), "b").unwrap();
        std::fs::write(dir.path().join("a.lua"), "").unwrap();
        let files = hash_tree(dir.path()).unwrap();
        let names: Vec<&str> = files.keys().map(String::as_str).collect();
        assert_eq!(names, ["a.lua", "pkg/tool.lua"]);
        // SHA-256 of the empty string.
        assert_eq!(
            files["a.lua"],
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn symbolic_links_are_refused_naming_the_link() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("leak.lua")).unwrap();
        let error = hash_tree(dir.path()).unwrap_err();
        assert!(error.path.ends_with("leak.lua"), "{error}");
        assert!(
            error.message.contains("symbolic link (to /etc/passwd)"),
            "{error}"
        );
    }
}
