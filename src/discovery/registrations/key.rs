//! A registering file's cache key: a digest of everything its run depended on. What is the
//! same for every file of a load (the toolhost version, the VMs' limits) is hashed once
//! per load into a base that each file's key starts from, and each `require` folder's
//! module fingerprint is computed once per load.

use super::super::ContentDigest;
use crate::lua::{LazyFile, SearchDir};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::ffi::OsString;
use std::hash::{Hash, Hasher};

/// Deepest `require` folder walked for the module fingerprint.
const MAX_LIB_DEPTH: usize = 16;

/// A file's key: a number in the cache (no hex text to format and compare per file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct Key(u64);

#[cfg(test)]
impl Key {
    /// A key of this digest (tests build files by hand).
    pub(super) fn from_digest(digest: u64) -> Self {
        Self(digest)
    }
}

/// What every key of a load starts from, and the load's module fingerprints.
#[derive(Debug)]
pub(super) struct Keys {
    /// Digest of the toolhost version and the load's limits.
    base: u64,
    /// Module fingerprints of `require` folders, computed once per load. Keyed by the
    /// path's bytes, hashed with foldhash: `Path`'s own hash walks its components with
    /// SipHash, and every file that required a module looks its folders up.
    lib_prints: HashMap<OsString, u64, foldhash::fast::RandomState>,
}

impl Default for Keys {
    fn default() -> Self {
        Self::new(0)
    }
}

impl Keys {
    /// The keys of a load whose limits digest to `limits`: a file that ran within one
    /// memory limit or load deadline may not run within another, so they are part of
    /// every key, as is the version (an upgrade may run a file differently).
    pub(super) fn new(limits: u64) -> Self {
        let mut hasher = crate::digest::hasher();
        env!("CARGO_PKG_VERSION").hash(&mut hasher);
        limits.hash(&mut hasher);
        Self {
            base: hasher.finish(),
            lib_prints: HashMap::default(),
        }
    }

    /// The key of `file`'s run (covering its `require` folders when it `required`);
    /// `source` is the digest of `file.source` (the one the effects cache names the file
    /// by, made once per file and load: hashing every source twice was a visible part of a
    /// warm start).
    pub(super) fn key(
        &mut self,
        file: &LazyFile,
        source: ContentDigest,
        scope: Option<&str>,
        required: bool,
    ) -> Key {
        let mut hasher = crate::digest::hasher();
        self.base.hash(&mut hasher);
        source.hash(&mut hasher);
        file.display.hash(&mut hasher);
        file.chunk_name.hash(&mut hasher);
        file.domain.hash(&mut hasher);
        file.capabilities.hash(&mut hasher);
        file.capability_hint.hash(&mut hasher);
        scope.hash(&mut hasher);
        required.hash(&mut hasher);
        for dir in file.search_dirs.iter() {
            // As bytes: `Path`'s hash walks the components.
            dir.shown.as_os_str().hash(&mut hasher);
            dir.canonical.as_os_str().hash(&mut hasher);
            if required {
                self.lib_print(dir).hash(&mut hasher);
            }
        }
        Key(hasher.finish())
    }

    /// Names and contents of the `.lua` files under `dir`, read through links (a module
    /// behind a symlink is its target's text; an edit that keeps a file's size and
    /// modification time, as `cp -p` or `rsync -a` can leave it, still changes the print).
    fn lib_print(&mut self, dir: &SearchDir) -> u64 {
        if let Some(print) = self.lib_prints.get(dir.canonical.as_os_str()) {
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
                let text =
                    crate::bounded_read::read_regular(path, super::super::MAX_FILE_BYTES).ok();
                text.hash(&mut hasher);
            }
        }
        let print = hasher.finish();
        self.lib_prints
            .insert(dir.canonical.as_os_str().to_owned(), print);
        print
    }
}
