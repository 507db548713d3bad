//! The registration cache `<cache_dir>/registrations.cache`: what each registering file
//! registered the last time it ran, keyed by everything that run depended on. A warm start
//! builds the registry from it without running those files; each VM runs a file at the
//! first use of one of its functions (see `LazyFile`), and that run must register the same
//! records.
//!
//! A file is cached only when its run could not have depended on anything but its key: it
//! ran without error on the first try, registered no hooks (they act on every call, so the
//! file runs at start-up) and read nothing from outside at top level (clock, environment,
//! files, store, random numbers: see `LoadingFile::impure`). A `check_fn` shared with an
//! earlier registration (a toolset-wide probe from a module) is recorded as that
//! registration's, and is taken from the cache only while that one is. The key digests the
//! toolhost version, the VMs' memory limit and load deadline, the file's bytes, how it is
//! run (its name, trust domain, capabilities, `require` folders, scope) and, when it
//! required a module at top level, the names and contents (read through links) of every
//! `.lua` file in its `require` folders.
//!
//! The file is a JSON index on its first line (each file's key and records, a record's
//! schema replaced by where its text is), then every schema's JSON text, one after the
//! other (see [`index`]). A warm start parses the index only, each record once and typed:
//! the schemas, most of the bytes, are copied out as text and parsed when a tool's schema
//! is first read (see `FunctionSchema`).
//!
//! Like the other caches the file is advisory: missing, corrupt, wrong-shaped or written by
//! another version or shape means "nothing cached" (every file runs, and the file is
//! written again). It is as trusted as the tool directories themselves (the cache
//! directory is the operator's): whoever can write it can make a tool appear with another
//! description until its first call, when the file's run must register records that
//! digest the same as the cached ones (every field as read, and the schema's text; see
//! `Expected`), or the call fails and the file is dropped from the cache.

mod index;
mod key;

use super::cache::write_atomically;
use super::{ContentDigest, ToolDir, Verdict};
use crate::lua::register::record::{Expected, ToolRecord};
use crate::lua::{LazyFile, SearchDir};
use index::{EntryToWrite, ReadEntry};
pub(crate) use key::Key;
use key::Keys;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const FILE: &str = "registrations.cache";
/// What the cache was called while it was one JSON document (removed when the new one is
/// written).
const OLD_FILE: &str = "registrations.json";
/// Largest file read (schemas of tens of thousands of tools).
const MAX_BYTES: u64 = 256 * 1024 * 1024;

/// A map keyed by path text, hashed with foldhash: every registering file is looked up on
/// a warm start, and SipHash over its path was a visible part of that.
type PathMap<V> = HashMap<String, V, foldhash::fast::RandomState>;

/// An entry of this load: still the one read, or new.
#[derive(Debug)]
enum Entry {
    Read(ReadEntry),
    New {
        key: Key,
        required: bool,
        /// The records; each holds its schema's text.
        tools: Vec<ToolRecord>,
    },
}

/// A cache hit: the records (for the registry) and what the file's run must register.
pub(crate) struct Hit {
    /// The records, in order; their `schema` is `null` (the schemas are the next field).
    pub records: Vec<ToolRecord>,
    /// Their schemas' JSON text, in order (read when first used).
    pub schemas: Vec<String>,
    /// Their expectations, in order.
    pub expected: Vec<Expected>,
}

/// The cache as read, and the entries of this load (written back when they differ).
#[derive(Debug, Default)]
pub(crate) struct Registrations {
    /// Where the file lives; `None` disables the cache (`check`, explicit files).
    file: Option<PathBuf>,
    /// The file's text: the schemas are copied out of it, and the records a lookup handed
    /// out are read from it again when the cache is written back.
    text: String,
    /// Where the schemas start in `text`.
    schemas_at: usize,
    /// Entries by path. Paths are keys as text (what the file holds): `Path`'s own hash
    /// walks its components, and was a visible part of a warm start. A path that is not
    /// UTF-8 is never cached (JSON could not hold it).
    read: PathMap<ReadEntry>,
    current: PathMap<Entry>,
    /// An entry was added or changed in this load.
    changed: bool,
    /// What the load's keys start from, and its module fingerprints.
    keys: Keys,
}

impl Registrations {
    /// Reads `cache_dir/registrations.cache` (anything unusable reads as empty).
    pub(crate) fn read(cache_dir: &Path) -> Self {
        let file = cache_dir.join(FILE);
        let text = crate::bounded_read::read_regular(&file, MAX_BYTES)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .unwrap_or_default();
        let (entries, schemas_at) = index::read(&text).unwrap_or_default();
        // Sized once; every entry read is usually kept for this load too.
        let mut read = PathMap::with_capacity_and_hasher(entries.len(), Default::default());
        read.extend(entries);
        let current = PathMap::with_capacity_and_hasher(read.len(), Default::default());
        Self {
            file: Some(file),
            text,
            schemas_at,
            read,
            current,
            ..Self::default()
        }
    }

    /// No cache: every file runs at load, nothing is written.
    pub(crate) fn disabled() -> Self {
        Self::default()
    }

    /// The same cache, its keys covering the VMs' memory limit and load deadline.
    pub(crate) fn under_limits(
        mut self,
        memory_limit_bytes: Option<usize>,
        load_deadline: std::time::Duration,
    ) -> Self {
        let mut hasher = crate::digest::hasher();
        memory_limit_bytes.hash(&mut hasher);
        load_deadline.hash(&mut hasher);
        self.keys = Keys::new(hasher.finish());
        self
    }

    /// Whether no file's registrations can come from the cache (it is disabled, missing,
    /// unusable, written by another version, or empty): every registering file runs at
    /// load, and no verdict is needed before the first file runs.
    pub(crate) fn holds_nothing(&self) -> bool {
        self.file.is_none() || self.read.is_empty()
    }

    /// The cache file (for a deferred file to remove when it registers something else).
    pub(crate) fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// The cached registrations of a file, when its key still matches `file`'s inputs and
    /// every record's schema is where the index says.
    pub(crate) fn lookup(
        &mut self,
        path: &Path,
        (file, source): (&LazyFile, ContentDigest),
        scope: Option<&str>,
    ) -> Option<Hit> {
        self.file.as_ref()?;
        let entry = self.read.get_mut(path.to_str()?)?;
        if entry.handed_out || entry.key != self.keys.key(file, source, scope, entry.required) {
            return None;
        }
        let mut hit = Hit {
            records: Vec::with_capacity(entry.tools.len()),
            schemas: Vec::with_capacity(entry.tools.len()),
            expected: Vec::with_capacity(entry.tools.len()),
        };
        for tool in &entry.tools {
            let schema = schema_text(&self.text, self.schemas_at, tool.schema)?;
            hit.expected.push(Expected::of(&tool.record, schema));
            hit.schemas.push(schema.to_string());
        }
        // Moved, not copied: should the cache be written, they are read again.
        hit.records = std::mem::take(&mut entry.tools)
            .into_iter()
            .map(|tool| tool.record)
            .collect();
        entry.handed_out = true;
        Some(hit)
    }

    /// The key of `file`'s run (covering its `require` folders when it `required`);
    /// `source` is the digest of `file.source`.
    pub(crate) fn key(
        &mut self,
        (file, source): (&LazyFile, ContentDigest),
        scope: Option<&str>,
        required: bool,
    ) -> Key {
        self.keys.key(file, source, scope, required)
    }

    /// Records what a file's run registered, for this load.
    pub(crate) fn keep(&mut self, path: &Path, key: &Key, required: bool, tools: &[ToolRecord]) {
        if self.file.is_none() {
            return;
        }
        let Some(path) = path.to_str() else {
            return;
        };
        let entry = Entry::New {
            key: *key,
            required,
            tools: tools.to_vec(),
        };
        self.current.insert(path.to_string(), entry);
        self.changed = true;
    }

    /// Keeps the entry read for `path` (its file was deferred) for this load.
    pub(crate) fn keep_read(&mut self, path: &Path) {
        if let Some((path, entry)) = path.to_str().and_then(|path| self.read.remove_entry(path)) {
            self.current.insert(path, Entry::Read(entry));
        }
    }

    /// Writes this load's entries when they differ from what was read; best effort.
    pub(crate) fn write_if_changed(&self) {
        let Some(file) = &self.file else { return };
        // Entries left in `read` belong to files that were not kept (gone, changed or no
        // longer cacheable).
        if !self.changed && self.read.is_empty() {
            return;
        }
        let Some(dir) = file.parent() else { return };
        let written = self
            .to_text()
            .ok_or_else(|| std::io::Error::other("an entry does not serialise"))
            .and_then(|text| write_atomically(dir, FILE, &text));
        match written {
            Ok(()) => {
                let _ = std::fs::remove_file(dir.join(OLD_FILE));
            }
            Err(e) => tracing::debug!("cannot write {}: {e}", file.display()),
        }
    }

    /// The file's text for this load's entries.
    fn to_text(&self) -> Option<String> {
        // Records handed out at lookup are read again from the file's text, only now that
        // the cache is written (something changed): a warm start copies none of them.
        let handed_out = |entry: &Entry| matches!(entry, Entry::Read(read) if read.handed_out);
        let again: PathMap<ReadEntry> = match self.current.values().any(handed_out) {
            true => index::read(&self.text)
                .map(|(entries, _)| entries.into_iter().collect())
                .unwrap_or_default(),
            false => PathMap::default(),
        };
        let entries = self.current.iter().filter_map(|(path, entry)| {
            let entry = match entry {
                Entry::Read(read) => {
                    let tools = match read.handed_out {
                        true => &again.get(path).filter(|e| e.key == read.key)?.tools,
                        false => &read.tools,
                    };
                    let tools = tools.iter().map(|tool| {
                        let schema = schema_text(&self.text, self.schemas_at, tool.schema)?;
                        Some((&tool.record, schema))
                    });
                    EntryToWrite {
                        key: read.key,
                        required: read.required,
                        // An entry whose schema is not where it says is left out.
                        tools: tools.collect::<Option<_>>()?,
                    }
                }
                Entry::New {
                    key,
                    required,
                    tools,
                } => EntryToWrite {
                    key: *key,
                    required: *required,
                    tools: tools.iter().map(|t| (t, t.schema.get())).collect(),
                },
            };
            Some((path.as_str(), entry))
        });
        index::text(entries)
    }
}

/// A schema's text, from its offsets among the schemas (`None` when they are not a
/// stretch of the file: the index was edited).
fn schema_text(text: &str, schemas_at: usize, [start, end]: [usize; 2]) -> Option<&str> {
    text.get(schemas_at.checked_add(start)?..schemas_at.checked_add(end)?)
}

/// What running `verdict`'s file needs (what its key covers), as a [`LazyFile`] that
/// expects nothing yet.
pub(super) fn lazy_file(
    verdict: &Verdict,
    dir: &ToolDir,
    domain: Arc<str>,
    search_dirs: Arc<[SearchDir]>,
    index: usize,
    source: Arc<[u8]>,
) -> LazyFile {
    LazyFile {
        display: verdict.shown.clone(),
        chunk_name: super::model_facing::model_facing(Path::new(&verdict.shown), &dir.path),
        index: index as u32,
        domain,
        search_dirs,
        capabilities: dir.capabilities.clone(),
        capability_hint: dir.capability_hint.clone(),
        source,
        expected: Arc::from([]),
        shared_checks: Vec::new(),
        cache_file: None,
    }
}
