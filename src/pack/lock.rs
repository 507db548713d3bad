//! `toolhost.lock`: for every installed pack, where it came from, the commit it was
//! resolved to and the SHA-256 of each of its files. Written sorted (TOML tables of
//! `BTreeMap`s), so the same packs always give the same bytes.

use super::error::{PackError, describe_toml_error};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Largest lock file read.
const MAX_LOCK_BYTES: u64 = 16 * 1024 * 1024;
/// The lock format this build writes and reads.
const LOCK_VERSION: u32 = 1;
/// The first lines of the file.
const HEADER: &str = "# toolhost.lock: the installed tool packs, written by `toolhost pack`. Do not edit;\n\
                      # commit it with toolhost.toml so every checkout loads the same files.\n";

/// The lock file: the installed packs by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackLock {
    /// The format version (1).
    pub version: u32,
    /// Installed packs by name (the folder under `packs/` and the plugin id).
    #[serde(default)]
    pub packs: BTreeMap<String, LockedPack>,
}

impl Default for PackLock {
    fn default() -> Self {
        Self {
            version: LOCK_VERSION,
            packs: BTreeMap::new(),
        }
    }
}

/// One installed pack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedPack {
    /// Where it was fetched from (a git URL or path), as given to `pack add`.
    pub source: String,
    /// The revision asked for (`#REV`: a tag, branch or commit); `pack update` follows it.
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The commit the files came from (none for a pack copied from a folder that is not a
    /// git repository).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Every file of the pack (path relative to the pack, `/`-separated) → SHA-256 (hex).
    pub files: BTreeMap<String, String>,
}

/// How a pack's folder differs from the lock, one file at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileChange {
    /// The file's contents differ from the recorded digest.
    Changed(String),
    /// The file is not in the lock.
    Added(String),
    /// The lock records a file that is missing.
    Removed(String),
}

impl std::fmt::Display for FileChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Changed(file) => write!(f, "{file} changed"),
            Self::Added(file) => write!(f, "{file} added"),
            Self::Removed(file) => write!(f, "{file} removed"),
        }
    }
}

impl PackLock {
    /// Reads `path`; a missing file is an empty lock.
    pub fn read(path: &Path) -> Result<Self, PackError> {
        let bytes = match crate::bounded_read::read_regular(path, MAX_LOCK_BYTES) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(PackError::new(path, format!("cannot read: {e}"))),
        };
        let text = String::from_utf8(bytes).map_err(|_| PackError::new(path, "not valid UTF-8"))?;
        let lock: Self = toml::from_str(&text)
            .map_err(|e| PackError::new(path, describe_toml_error(&text, &e)))?;
        if lock.version != LOCK_VERSION {
            return Err(PackError::new(
                path,
                format!(
                    "version: lock format {} is not known to this toolhost (it reads {LOCK_VERSION})",
                    lock.version
                ),
            ));
        }
        for name in lock.packs.keys() {
            crate::registry::ToolName::new(name)
                .map_err(|e| PackError::new(path, format!("packs.{name}: the pack name {e}")))?;
        }
        Ok(lock)
    }

    /// The file's text: a header, then the packs sorted by name, files sorted by path.
    pub fn to_text(&self) -> String {
        // Plain data of strings and maps: serialising it cannot fail.
        let body = toml::to_string(self).unwrap_or_default();
        format!("{HEADER}{body}")
    }

    /// Writes the lock to `path` through a new temporary file beside it (a crash leaves the
    /// old lock). The temporary file gets a fresh random name and is created exclusively, so
    /// a link committed in its place (`toolhost.lock.tmp -> elsewhere`) is never followed;
    /// a link at `path` itself is replaced, not written through.
    #[cfg(feature = "cli")]
    pub fn write(&self, path: &Path) -> Result<(), PackError> {
        let fail = |e: std::io::Error| PackError::new(path, format!("cannot write: {e}"));
        let parent = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let mut builder = tempfile::Builder::new();
        builder.prefix(".toolhost.lock.").suffix(".tmp");
        // The mode `fs::write` gives a new file (0666 less the umask), not tempfile's 0600:
        // the lock is shared with everyone who reads the configuration.
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let mut temp = builder.tempfile_in(parent).map_err(fail)?;
        std::io::Write::write_all(&mut temp, self.to_text().as_bytes()).map_err(fail)?;
        temp.persist(path).map_err(|e| fail(e.error))?;
        Ok(())
    }
}

impl LockedPack {
    /// How the files under `dir` differ from the recorded ones, sorted by path (empty: they
    /// match). A folder that cannot be hashed (a link, a file too large) is an error.
    pub fn verify(&self, dir: &Path) -> Result<Vec<FileChange>, PackError> {
        let found = super::hash_tree(dir)?;
        Ok(diff(&self.files, &found))
    }
}

/// The changes from `recorded` to `found`, sorted by path.
fn diff(recorded: &BTreeMap<String, String>, found: &BTreeMap<String, String>) -> Vec<FileChange> {
    let mut changes = Vec::new();
    for (file, digest) in recorded {
        match found.get(file) {
            None => changes.push(FileChange::Removed(file.clone())),
            Some(now) if now != digest => changes.push(FileChange::Changed(file.clone())),
            Some(_) => {}
        }
    }
    for file in found.keys().filter(|f| !recorded.contains_key(*f)) {
        changes.push(FileChange::Added(file.clone()));
    }
    changes.sort_by(|a, b| name_of(a).cmp(name_of(b)));
    changes
}

fn name_of(change: &FileChange) -> &str {
    match change {
        FileChange::Changed(f) | FileChange::Added(f) | FileChange::Removed(f) => f,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> PackLock {
        let mut lock = PackLock::default();
        lock.packs.insert(
            "weather".into(),
            LockedPack {
                source: "file:///tmp/weather".into(),
                reference: Some("v1".into()),
                commit: Some("0123abcd".into()),
                files: [("b.lua", "2"), ("a.lua", "1")]
                    .into_iter()
                    .map(|(a, b)| (a.to_string(), b.to_string()))
                    .collect(),
            },
        );
        lock
    }

    #[test]
    fn the_text_is_sorted_and_reads_back() {
        let text = sample().to_text();
        assert!(
            text.find("\"a.lua\"").unwrap() < text.find("\"b.lua\"").unwrap(),
            "{text}"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.lock");
        sample().write(&path).unwrap();
        assert_eq!(PackLock::read(&path).unwrap(), sample());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }

    #[test]
    fn changed_added_and_removed_files_are_named() {
        let recorded = sample().packs["weather"].files.clone();
        let found = [("a.lua", "1"), ("b.lua", "X"), ("c.lua", "3")]
            .into_iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        let changes = diff(&recorded, &found);
        assert_eq!(
            changes,
            [
                FileChange::Changed("b.lua".into()),
                FileChange::Added("c.lua".into())
            ]
        );
        let changes = diff(&recorded, &BTreeMap::new());
        assert_eq!(changes[0].to_string(), "a.lua removed");
    }

    #[test]
    fn a_missing_lock_is_empty_and_a_bad_one_names_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.lock");
        assert_eq!(PackLock::read(&path).unwrap(), PackLock::default());
        std::fs::write(&path, "version = 1\n[packs.a]\nsource = 3\n").unwrap();
        let error = PackLock::read(&path).unwrap_err();
        assert!(error.message.contains("line 3"), "{error}");
    }
}
