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
//! other. A warm start parses the index only: the schemas, most of the bytes, are copied
//! out as text and parsed when a tool's schema is first read (see `FunctionSchema`).
//!
//! Like the other caches the file is advisory: missing, corrupt, wrong-shaped or written by
//! another version means "nothing cached" (every file runs, and the file is written again).
//! It is as trusted as the tool directories themselves: whoever can write it can make a
//! tool appear with another description until its first call (when the run must agree).

use super::cache::write_atomically;
use super::{ToolDir, Verdict};
use crate::lua::register::record::{Expected, ToolRecord};
use crate::lua::{LazyFile, SearchDir};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const FILE: &str = "registrations.cache";
/// What the cache was called while it was one JSON document (removed when the new one is
/// written).
const OLD_FILE: &str = "registrations.json";
/// Largest file read (schemas of tens of thousands of tools).
const MAX_BYTES: u64 = 256 * 1024 * 1024;
/// Deepest `require` folder walked for the module fingerprint.
const MAX_LIB_DEPTH: usize = 16;

/// The index: the file's first line, one JSON object. The schemas follow it, concatenated
/// (JSON never holds a raw newline, so the first newline ends the index).
#[derive(Deserialize)]
struct Index<'a> {
    toolhost: &'a str,
    // Owned paths: a path with a quote or a backslash is escaped in the file.
    #[serde(borrow)]
    files: HashMap<String, IndexedFile<'a>>,
}

/// An entry's key, whether it required a module, and each record's text and schema text.
type EntryTexts<'a> = (&'a str, bool, Vec<(&'a str, &'a str)>);

/// The index as written (files in path order).
#[derive(Serialize)]
struct IndexToWrite<'a> {
    toolhost: &'a str,
    files: std::collections::BTreeMap<&'a str, IndexedFile<'a>>,
}

/// One file's entry in the index.
#[derive(Deserialize, Serialize)]
struct IndexedFile<'a> {
    key: &'a str,
    required: bool,
    #[serde(borrow)]
    tools: Vec<IndexedTool<'a>>,
}

/// One record in the index: its JSON without the schema, and where the schema's text is
/// among the schemas (byte offsets from the first byte after the index).
#[derive(Deserialize, Serialize)]
struct IndexedTool<'a> {
    #[serde(borrow)]
    record: &'a RawValue,
    schema: [usize; 2],
}

/// A file's entry as read: its key, and where each record's two texts are in the file.
#[derive(Debug)]
struct ReadEntry {
    key: String,
    required: bool,
    tools: Vec<ReadTool>,
}

/// Where one record's texts are in the file.
#[derive(Debug)]
struct ReadTool {
    record: Range<usize>,
    schema: Range<usize>,
}

/// An entry of this load: still the one read, or new.
#[derive(Debug)]
enum Entry {
    Read(ReadEntry),
    New {
        key: String,
        required: bool,
        /// Each record's two texts ([`ToolRecord::cached_parts`]).
        tools: Vec<(String, String)>,
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
    /// The file's text; entries are read from it in place (no copies of a large file).
    text: String,
    /// Entries by path. Paths are keys as text (what the file holds): `Path`'s own hash
    /// walks its components, and was a visible part of a warm start. A path that is not
    /// UTF-8 is never cached (JSON could not hold it).
    read: HashMap<String, ReadEntry>,
    current: HashMap<String, Entry>,
    /// An entry was added or changed in this load.
    changed: bool,
    /// Module fingerprints of `require` folders, computed once per load.
    lib_prints: HashMap<PathBuf, u64>,
    /// The load's limits (memory, load deadline): a file that ran within one limit may not
    /// run within another, so they are part of every key.
    limits: u64,
}

impl Registrations {
    /// Reads `cache_dir/registrations.cache` (anything unusable reads as empty).
    pub(crate) fn read(cache_dir: &Path) -> Self {
        let file = cache_dir.join(FILE);
        let text = crate::bounded_read::read_regular(&file, MAX_BYTES)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .unwrap_or_default();
        let read = entries(&text).unwrap_or_default();
        Self {
            file: Some(file),
            text,
            read,
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
        self.limits = hasher.finish();
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
    /// every record reads back.
    pub(crate) fn lookup(
        &mut self,
        path: &Path,
        file: &LazyFile,
        scope: Option<&str>,
    ) -> Option<Hit> {
        self.file.as_ref()?;
        let entry = self.read.get(path.to_str()?)?;
        if entry.key
            != key(
                &mut self.lib_prints,
                self.limits,
                file,
                scope,
                entry.required,
            )
        {
            return None;
        }
        let mut hit = Hit {
            records: Vec::with_capacity(entry.tools.len()),
            schemas: Vec::with_capacity(entry.tools.len()),
            expected: Vec::with_capacity(entry.tools.len()),
        };
        for tool in &entry.tools {
            let text = self.text.get(tool.record.clone())?;
            let schema = self.text.get(tool.schema.clone())?;
            let record: ToolRecord = serde_json::from_str(text).ok()?;
            hit.expected.push(Expected::of(&record, text, schema));
            hit.schemas.push(schema.to_string());
            hit.records.push(record);
        }
        Some(hit)
    }

    /// The key of `file`'s run (covering its `require` folders when it `required`).
    pub(crate) fn key(&mut self, file: &LazyFile, scope: Option<&str>, required: bool) -> String {
        key(&mut self.lib_prints, self.limits, file, scope, required)
    }

    /// Records what a file's run registered, for this load.
    pub(crate) fn keep(&mut self, path: &Path, key: &str, required: bool, tools: &[ToolRecord]) {
        if self.file.is_none() {
            return;
        }
        let (Some(path), Some(tools)) = (
            path.to_str(),
            tools.iter().map(ToolRecord::cached_parts).collect(),
        ) else {
            return;
        };
        let entry = Entry::New {
            key: key.to_string(),
            required,
            tools,
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

    /// The file's text for this load's entries: the index line, then the schemas. Files
    /// in path order, so that the same entries give the same file.
    fn to_text(&self) -> Option<String> {
        let mut schemas = String::new();
        let mut files = std::collections::BTreeMap::new();
        for (path, entry) in &self.current {
            let Some((key, required, texts)) = self.texts_of(entry) else {
                continue;
            };
            let mut tools = Vec::with_capacity(texts.len());
            for (record, schema) in texts {
                let start = schemas.len();
                schemas.push_str(schema);
                tools.push(IndexedTool {
                    record: serde_json::from_str(record).ok()?,
                    schema: [start, schemas.len()],
                });
            }
            let file = IndexedFile {
                key,
                required,
                tools,
            };
            files.insert(path.as_str(), file);
        }
        let index = IndexToWrite {
            toolhost: env!("CARGO_PKG_VERSION"),
            files,
        };
        let mut text = serde_json::to_string(&index).ok()?;
        text.push('\n');
        text.push_str(&schemas);
        Some(text)
    }

    /// An entry's key, whether it required a module, and each record's two texts.
    fn texts_of<'a>(&'a self, entry: &'a Entry) -> Option<EntryTexts<'a>> {
        match entry {
            Entry::Read(read) => {
                let texts = read.tools.iter().map(|tool| {
                    let record = self.text.get(tool.record.clone())?;
                    Some((record, self.text.get(tool.schema.clone())?))
                });
                Some((&read.key, read.required, texts.collect::<Option<_>>()?))
            }
            Entry::New {
                key,
                required,
                tools,
            } => {
                let texts = tools.iter().map(|(t, s)| (t.as_str(), s.as_str()));
                Some((key, *required, texts.collect()))
            }
        }
    }
}

/// Each file's entry, with where its records' texts are in `text`, when it is a cache this
/// version wrote. Only the index is parsed; the records are read at lookup, and the
/// schemas only when a tool's schema is first used.
fn entries(text: &str) -> Option<HashMap<String, ReadEntry>> {
    let newline = text.find('\n')?;
    let index: Index<'_> = serde_json::from_str(&text[..newline]).ok()?;
    if index.toolhost != env!("CARGO_PKG_VERSION") {
        return None;
    }
    let schemas = newline + 1;
    // A raw value borrows from `text`: its place is its address minus the text's.
    let base = text.as_ptr() as usize;
    let place = |raw: &RawValue| {
        let start = raw.get().as_ptr() as usize - base;
        start..start + raw.get().len()
    };
    let read = index.files.into_iter().map(|(path, entry)| {
        let tools = entry.tools.iter().map(|tool| ReadTool {
            record: place(tool.record),
            schema: schemas.saturating_add(tool.schema[0])..schemas.saturating_add(tool.schema[1]),
        });
        let entry = ReadEntry {
            key: entry.key.to_string(),
            required: entry.required,
            tools: tools.collect(),
        };
        (path, entry)
    });
    Some(read.collect())
}

/// The key of `file`'s run (covering its `require` folders when it `required`).
fn key(
    lib_prints: &mut HashMap<PathBuf, u64>,
    limits: u64,
    file: &LazyFile,
    scope: Option<&str>,
    required: bool,
) -> String {
    let mut hasher = crate::digest::hasher();
    env!("CARGO_PKG_VERSION").hash(&mut hasher);
    limits.hash(&mut hasher);
    file.source.hash(&mut hasher);
    file.display.hash(&mut hasher);
    file.chunk_name.hash(&mut hasher);
    file.domain.hash(&mut hasher);
    file.capabilities.hash(&mut hasher);
    file.capability_hint.hash(&mut hasher);
    scope.hash(&mut hasher);
    required.hash(&mut hasher);
    for dir in &file.search_dirs {
        // As bytes: `Path`'s hash walks the components.
        dir.shown.as_os_str().hash(&mut hasher);
        dir.canonical.as_os_str().hash(&mut hasher);
        if required {
            lib_print(lib_prints, dir).hash(&mut hasher);
        }
    }
    format!("{:016x}", hasher.finish())
}

/// Names and contents of the `.lua` files under `dir`, read through links (a module
/// behind a symlink is its target's text; an edit that keeps a file's size and modification
/// time, as `cp -p` or `rsync -a` can leave it, still changes the print).
fn lib_print(lib_prints: &mut HashMap<PathBuf, u64>, dir: &SearchDir) -> u64 {
    if let Some(print) = lib_prints.get(&dir.canonical) {
        return *print;
    }
    let mut hasher = crate::digest::hasher();
    let walk = walkdir::WalkDir::new(&dir.canonical)
        .max_depth(MAX_LIB_DEPTH)
        .sort_by_file_name();
    for entry in walk.into_iter().filter_map(Result::ok) {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "lua") {
            path.hash(&mut hasher);
            let text = crate::bounded_read::read_regular(path, super::MAX_FILE_BYTES).ok();
            text.hash(&mut hasher);
        }
    }
    let print = hasher.finish();
    lib_prints.insert(dir.canonical.clone(), print);
    print
}

/// What running `verdict`'s file needs (what its key covers), as a [`LazyFile`] that
/// expects nothing yet.
pub(super) fn lazy_file(
    verdict: &Verdict,
    dir: &ToolDir,
    search_dirs: Vec<SearchDir>,
    index: usize,
    source: Arc<[u8]>,
) -> LazyFile {
    LazyFile {
        display: verdict.shown.clone(),
        chunk_name: super::model_facing::model_facing(Path::new(&verdict.shown), &dir.path),
        index: index as u32,
        domain: dir.source.to_string().into(),
        search_dirs,
        capabilities: dir.capabilities.clone(),
        capability_hint: dir.capability_hint.clone(),
        source,
        expected: Arc::from([]),
        shared_checks: Vec::new(),
        cache_file: None,
    }
}
