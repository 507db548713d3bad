//! What one load learns of the file system while following handlers, each learnt once:
//! where `require(name)` leads from a file's search folders (one `lstat` per module and
//! folder list, not per tool), and each module file's bytes and digest (one read per module).
//! Memoised for the load only: a later load (a reload, the next start) looks again.

use super::digest::Digest;
use crate::lua::{SearchDir, resolve_module};
use foldhash::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a module name led: the module's canonical path and its path as shown, or why it
/// was not found (the message a site quotes).
pub(super) type Found = Result<(PathBuf, String), String>;

/// A module file as read in this load.
#[derive(Debug)]
pub(super) struct ModuleFile {
    /// The digest of its bytes; `None`: it could not be read.
    pub(super) digest: Option<Digest>,
    /// Its bytes, until they are analysed (only a module not in the cache is).
    pub(super) bytes: Option<Vec<u8>>,
}

/// A search-folder list's [`dirs_key`], with that text's digest (what a cached entry
/// names it by, and what the memo of look-ups is keyed by).
#[derive(Debug, Clone)]
pub(super) struct DirsKey {
    /// The key's text.
    pub(super) text: Arc<str>,
    /// The digest of `text`.
    pub(super) digest: Digest,
}

/// The memoised look-ups of one load.
#[derive(Debug, Default)]
pub(super) struct Lookups {
    /// By the digest of the search folders' [`dirs_key`] (with the key itself, compared
    /// too), then by module name.
    found: HashMap<Digest, (Arc<str>, HashMap<String, Found>)>,
    /// By canonical path.
    files: HashMap<OsString, ModuleFile>,
    /// The last search-folder list asked about, and its key: files one after the other in
    /// a directory search the same folders, and making the key cost more than comparing.
    last_dirs: Option<(Vec<SearchDir>, Option<DirsKey>)>,
}

/// The text that tells two search-folder lists apart (each folder's canonical and shown
/// path, in order, each after its length: no separator to escape in JSON, none a path can
/// fake); `None` when a path is not UTF-8 (such a list is neither memoised nor cached: it
/// is looked up afresh every time).
fn dirs_key(dirs: &[SearchDir]) -> Option<String> {
    let bytes: usize = dirs
        .iter()
        .map(|dir| dir.canonical.as_os_str().len() + dir.shown.as_os_str().len() + 8)
        .sum();
    let mut key = String::with_capacity(bytes);
    for dir in dirs {
        for path in [dir.canonical.to_str()?, dir.shown.to_str()?] {
            push_decimal(&mut key, path.len());
            key.push(':');
            key.push_str(path);
        }
    }
    Some(key)
}

/// Appends `n` in decimal (`write!` costs more than the rest of the key: this runs once
/// per file on every start).
fn push_decimal(text: &mut String, n: usize) {
    if n >= 10 {
        push_decimal(text, n / 10);
    }
    text.push(char::from(b'0' + (n % 10) as u8));
}

impl Lookups {
    /// The [`DirsKey`] of `dirs` (`None`: a path is not UTF-8).
    pub(super) fn dirs_key(&mut self, dirs: &[SearchDir]) -> Option<DirsKey> {
        if let Some((last, key)) = &self.last_dirs
            && same_dirs(last, dirs)
        {
            return key.clone();
        }
        let key = dirs_key(dirs).map(|text| DirsKey {
            digest: Digest::of(text.as_bytes()),
            text: text.into(),
        });
        self.last_dirs = Some((dirs.to_vec(), key.clone()));
        key
    }

    /// Where `require(name)` leads from `dirs` (whose key is `key`).
    pub(super) fn find(&mut self, key: Option<&DirsKey>, dirs: &[SearchDir], name: &str) -> Found {
        match key.and_then(|key| found(&mut self.found, key, dirs, name)) {
            Some(found) => found.clone(),
            None => resolve_module(dirs, name).map_err(|e| e.to_string()),
        }
    }

    /// Whether `require(name)` from `dirs` (whose key is `key`) still leads to the module
    /// at canonical `path` shown as `shown`, whose bytes have `digest` (`None`:
    /// unreadable). Compared in place: a warm start checks this for every module of every
    /// cached entry.
    pub(super) fn still_leads(
        &mut self,
        (key, dirs): (&DirsKey, &[SearchDir]),
        name: &str,
        (path, shown): (&str, &str),
        digest: Option<Digest>,
    ) -> bool {
        let Self {
            found: names,
            files,
            ..
        } = self;
        let leads = |(now_path, now_shown): &(PathBuf, String), files: &mut _| {
            now_path.as_os_str() == OsStr::new(path)
                && now_shown == shown
                && module_file(files, now_path).digest == digest
        };
        match found(names, key, dirs, name) {
            Some(Ok(now)) => leads(now, files),
            Some(Err(_)) => false,
            None => match resolve_module(dirs, name) {
                Ok(now) => leads(&now, files),
                Err(_) => false,
            },
        }
    }

    /// Whether `require(name)` from `dirs` (whose key is `key`) still fails with `message`.
    pub(super) fn still_misses(
        &mut self,
        (key, dirs): (&DirsKey, &[SearchDir]),
        name: &str,
        message: &str,
    ) -> bool {
        match found(&mut self.found, key, dirs, name) {
            Some(found) => matches!(found, Err(now) if now == message),
            None => matches!(resolve_module(dirs, name), Err(now) if now.to_string() == message),
        }
    }

    /// The module file at canonical `path`, read at its first use in this load.
    pub(super) fn file(&mut self, path: &Path) -> &mut ModuleFile {
        module_file(&mut self.files, path)
    }
}

/// Whether two search-folder lists are the same folders, shown the same (compared as
/// bytes: `Path`'s own comparison walks the components).
fn same_dirs(one: &[SearchDir], other: &[SearchDir]) -> bool {
    one.len() == other.len()
        && one.iter().zip(other).all(|(one, other)| {
            one.canonical.as_os_str() == other.canonical.as_os_str()
                && one.shown.as_os_str() == other.shown.as_os_str()
        })
}

/// Where `require(name)` leads from `dirs` (whose key is `key`), looked up at the first
/// ask in this load; `None` when another list's key has the same digest (never seen in
/// practice: that list is then looked up afresh every time, not memoised).
fn found<'f>(
    found: &'f mut HashMap<Digest, (Arc<str>, HashMap<String, Found>)>,
    key: &DirsKey,
    dirs: &[SearchDir],
    name: &str,
) -> Option<&'f Found> {
    let (text, names) = found
        .entry(key.digest)
        .or_insert_with(|| (key.text.clone(), HashMap::default()));
    if !Arc::ptr_eq(text, &key.text) && **text != *key.text {
        return None;
    }
    if !names.contains_key(name) {
        let now = resolve_module(dirs, name).map_err(|e| e.to_string());
        names.insert(name.to_string(), now);
    }
    names.get(name)
}

/// The module file at canonical `path` in `files`, read at its first use in this load.
fn module_file<'f>(
    files: &'f mut HashMap<OsString, ModuleFile>,
    path: &Path,
) -> &'f mut ModuleFile {
    let key: &OsStr = path.as_os_str();
    if !files.contains_key(key) {
        let bytes = crate::bounded_read::read_regular(path, crate::discovery::MAX_FILE_BYTES).ok();
        let file = ModuleFile {
            digest: bytes.as_deref().map(Digest::of),
            bytes,
        };
        files.insert(key.to_os_string(), file);
    }
    files.get_mut(key).expect("inserted above")
}
