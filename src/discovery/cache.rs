//! The verdict cache `<cache_dir>/discovery.json` (docs/discovery.md): absolute path →
//! `[mtime_ns, size, registers]`. Any problem with the file (missing, unreadable, corrupt,
//! wrong shape) means "no cache"; writing is best effort, atomic (temp file + rename) and
//! only happens when something changed.

use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// Largest verdict cache read.
const MAX_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// `(mtime_ns, size)`: a verdict is reused only when both match.
pub(super) type Stamp = (u64, u64);

/// The cached verdicts, by absolute path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct VerdictCache {
    entries: BTreeMap<String, (Stamp, bool)>,
}

/// The stamp in already read metadata.
pub(super) fn stamp_of(meta: &std::fs::Metadata) -> Option<Stamp> {
    let mtime = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
    Some((u64::try_from(mtime.as_nanos()).ok()?, meta.len()))
}

impl VerdictCache {
    /// The cache file inside `cache_dir`.
    pub(crate) fn file(cache_dir: &Path) -> PathBuf {
        cache_dir.join("discovery.json")
    }

    /// Reads the cache; anything unusable (not a regular file, over 64 MiB, not the
    /// expected JSON) gives an empty cache.
    pub(crate) fn read(cache_dir: &Path) -> Self {
        let path = Self::file(cache_dir);
        let Ok(bytes) = crate::bounded_read::read_regular(&path, MAX_CACHE_BYTES) else {
            return Self::default();
        };
        match Self::parse(&bytes) {
            Some(cache) => cache,
            None => {
                tracing::debug!("ignoring unusable discovery cache {}", path.display());
                Self::default()
            }
        }
    }

    fn parse(bytes: &[u8]) -> Option<Self> {
        let Value::Object(map) = serde_json::from_slice::<Value>(bytes).ok()? else {
            return None;
        };
        let mut entries = BTreeMap::new();
        for (path, value) in map {
            // One wrong-shaped entry invalidates only itself.
            if let Value::Array(items) = value
                && let [mtime, size, registers] = items.as_slice()
                && let (Some(mtime), Some(size), Some(registers)) =
                    (mtime.as_u64(), size.as_u64(), registers.as_bool())
            {
                entries.insert(path, ((mtime, size), registers));
            }
        }
        Some(Self { entries })
    }

    /// The cached verdict for `path` if its stamp matches.
    pub(crate) fn get(&self, path: &str, stamp: Stamp) -> Option<bool> {
        match self.entries.get(path) {
            Some((cached, registers)) if *cached == stamp => Some(*registers),
            _ => None,
        }
    }

    /// Records a verdict.
    pub(crate) fn insert(&mut self, path: String, stamp: Stamp, registers: bool) {
        self.entries.insert(path, (stamp, registers));
    }

    /// Writes the cache when it differs from `previous`; failures are logged, never fatal.
    pub(crate) fn write_if_changed(&self, previous: &Self, cache_dir: &Path) {
        if self == previous {
            return;
        }
        if let Err(e) = self.write(cache_dir) {
            tracing::debug!(
                "cannot write discovery cache in {}: {e}",
                cache_dir.display()
            );
        }
    }

    fn write(&self, cache_dir: &Path) -> std::io::Result<()> {
        let mut map = Map::new();
        for (path, ((mtime, size), registers)) in &self.entries {
            map.insert(path.clone(), serde_json::json!([mtime, size, registers]));
        }
        write_atomically(cache_dir, "discovery.json", &Value::Object(map).to_string())
    }
}

/// Writes `cache_dir/name` as a whole (temp file + rename), so a reader sees the old or the
/// new file, never half of one.
pub(super) fn write_atomically(cache_dir: &Path, name: &str, text: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(cache_dir)?;
    let nanos = std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    // A unique temp name per writer, so two processes never write into one temp file.
    let temp = cache_dir.join(format!(".{name}.{}.{nanos}.tmp", std::process::id()));
    std::fs::write(&temp, text)?;
    let renamed = std::fs::rename(&temp, cache_dir.join(name));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    renamed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_shapes_are_ignored() {
        assert_eq!(VerdictCache::parse(b"[1,2]"), None);
        assert_eq!(VerdictCache::parse(b"{\"a\""), None);
        let cache = VerdictCache::parse(br#"{"/a":[1,2,true],"/b":[1,"x",true],"/c":5}"#).unwrap();
        assert_eq!(cache.get("/a", (1, 2)), Some(true));
        assert_eq!(cache.get("/a", (1, 3)), None);
        assert_eq!(cache.get("/b", (1, 2)), None);
    }

    #[test]
    fn writes_atomically_only_on_change() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = VerdictCache::default();
        cache.insert("/x.lua".into(), (5, 6), true);
        cache.write_if_changed(&VerdictCache::default(), dir.path());
        let read = VerdictCache::read(dir.path());
        assert_eq!(read, cache);
        let file = VerdictCache::file(dir.path());
        std::fs::write(&file, "sentinel").unwrap();
        cache.write_if_changed(&read, dir.path());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "sentinel");
        let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 1);
    }
}
