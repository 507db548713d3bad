//! The verdict cache `<cache_dir>/discovery.json` (docs/discovery.md): absolute path →
//! `[mtime_ns, size, registers]`. Any problem with the file (missing, unreadable, corrupt,
//! wrong shape) means "no cache"; writing is best effort, atomic (temp file + rename) and
//! only happens when something changed.

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// Largest verdict cache read.
const MAX_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// `(mtime_ns, size)`: a verdict is reused only when both match.
pub(super) type Stamp = (u64, u64);

/// The cached verdicts, by absolute path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct VerdictCache {
    entries: HashMap<String, (Stamp, bool), foldhash::fast::RandomState>,
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
        let Entries(entries) = serde_json::from_slice(bytes).ok()?;
        Some(Self { entries })
    }

    /// An empty cache with room for `capacity` verdicts.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self {
            entries: HashMap::with_capacity_and_hasher(capacity, Default::default()),
        }
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
        let mut entries: Vec<_> = self.entries.iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for (path, ((mtime, size), registers)) in entries {
            map.insert(path.clone(), serde_json::json!([mtime, size, registers]));
        }
        write_atomically(cache_dir, "discovery.json", &Value::Object(map).to_string())
    }
}

/// The file's object read straight into entries (no `Value` tree: a warm start reads it
/// every time); an entry of any other shape than `[mtime_ns, size, registers]` is left out
/// (it invalidates only itself), anything but an object fails the whole file.
struct Entries(HashMap<String, (Stamp, bool), foldhash::fast::RandomState>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Object;
        impl<'de> Visitor<'de> for Object {
            type Value = Entries;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of verdicts")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries, A::Error> {
                let capacity = map.size_hint().unwrap_or(0).min(4096);
                let mut entries = HashMap::with_capacity_and_hasher(capacity, Default::default());
                while let Some((path, Entry(entry))) = map.next_entry::<String, Entry>()? {
                    match entry {
                        Some(entry) => entries.insert(path, entry),
                        // A later well-shaped duplicate still counts, as with a `Value` map.
                        None => entries.remove(&path),
                    };
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_map(Object)
    }
}

/// One entry: `Some` when it is `[mtime_ns, size, registers]`, `None` for any other JSON.
struct Entry(Option<(Stamp, bool)>);

/// One element of an entry's array.
enum Item {
    Number(u64),
    Bool(bool),
    Other,
}

impl<'de> Deserialize<'de> for Entry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Shape;
        impl<'de> Visitor<'de> for Shape {
            type Value = Entry;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("[mtime_ns, size, registers]")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Entry, A::Error> {
                let first = seq.next_element::<Item>()?;
                let second = seq.next_element::<Item>()?;
                let third = seq.next_element::<Item>()?;
                let mut extra = false;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    extra = true;
                }
                Ok(Entry(match (first, second, third, extra) {
                    (
                        Some(Item::Number(mtime)),
                        Some(Item::Number(size)),
                        Some(Item::Bool(registers)),
                        false,
                    ) => Some(((mtime, size), registers)),
                    _ => None,
                }))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entry, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Entry(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Entry, E> {
                Ok(Entry(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Entry, E> {
                Ok(Entry(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Entry, E> {
                Ok(Entry(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Entry, E> {
                Ok(Entry(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<Entry, E> {
                Ok(Entry(None))
            }
            fn visit_unit<E>(self) -> Result<Entry, E> {
                Ok(Entry(None))
            }
        }
        deserializer.deserialize_any(Shape)
    }
}

impl<'de> Deserialize<'de> for Item {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Scalar;
        impl<'de> Visitor<'de> for Scalar {
            type Value = Item;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number or a boolean")
            }
            fn visit_u64<E>(self, n: u64) -> Result<Item, E> {
                Ok(Item::Number(n))
            }
            fn visit_bool<E>(self, b: bool) -> Result<Item, E> {
                Ok(Item::Bool(b))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Item, E> {
                Ok(Item::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Item, E> {
                Ok(Item::Other)
            }
            fn visit_str<E>(self, _: &str) -> Result<Item, E> {
                Ok(Item::Other)
            }
            fn visit_unit<E>(self) -> Result<Item, E> {
                Ok(Item::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Item, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Item::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Item, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Item::Other)
            }
        }
        deserializer.deserialize_any(Scalar)
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
    fn an_entry_of_any_other_shape_invalidates_only_itself() {
        let text = br#"{"/ok":[1,2,false],"/long":[1,2,true,4],"/short":[1,2],"/neg":[-1,2,true],
            "/float":[1.5,2,true],"/nested":[[1],2,true],"/obj":{"a":[1,2,true]},"/null":null,
            "/str":"x","/empty":[],"/last":[3,4,true]}"#;
        let cache = VerdictCache::parse(text).unwrap();
        let kept: Vec<&String> = {
            let mut kept: Vec<&String> = cache.entries.keys().collect();
            kept.sort();
            kept
        };
        assert_eq!(kept, ["/last", "/ok"]);
        assert_eq!(cache.get("/ok", (1, 2)), Some(false));
        assert_eq!(cache.get("/last", (3, 4)), Some(true));
    }

    #[test]
    fn a_duplicate_path_counts_as_its_last_entry() {
        let cache = VerdictCache::parse(br#"{"/a":[1,2,true],"/a":[1,2,false]}"#).unwrap();
        assert_eq!(cache.get("/a", (1, 2)), Some(false));
        let cache = VerdictCache::parse(br#"{"/a":[1,2,true],"/a":"x"}"#).unwrap();
        assert_eq!(cache.get("/a", (1, 2)), None);
    }

    #[test]
    fn trailing_garbage_or_a_non_object_is_no_cache() {
        assert_eq!(VerdictCache::parse(br#"{"/a":[1,2,true]} x"#), None);
        assert_eq!(VerdictCache::parse(b"null"), None);
        assert_eq!(VerdictCache::parse(b"\"[1,2,true]\""), None);
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
