//! The analyses of this load, and `<cache_dir>/effects.json`: file digest → [`Summary`].
//! Like the other caches it is advisory: missing, corrupt or written by another version
//! means "nothing cached"; it is written (atomically) only when this load analysed a file
//! it did not hold. Keyed by content, so an edited file or module is analysed again.

use super::summary::Summary;
use crate::discovery::cache::write_atomically;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const FILE: &str = "effects.json";
/// Whose analyses the file holds: this toolhost version and the analysis rules' revision
/// (bumped whenever the rules change what a file's summary says, so a cache written under
/// older rules by a build of the same version is not trusted).
const WRITTEN_BY: &str = concat!(env!("CARGO_PKG_VERSION"), "/effects-2");
/// Largest cache read.
const MAX_BYTES: u64 = 64 * 1024 * 1024;

#[derive(Serialize, Deserialize)]
struct CacheText {
    toolhost: String,
    files: BTreeMap<String, Summary>,
}

/// What the analysis knows in this load, and how annotations are checked.
#[derive(Debug, Default)]
pub(crate) struct Effects {
    /// `effects.json`'s directory; `None`: nothing is read or written.
    dir: Option<PathBuf>,
    /// How a contradiction is treated.
    pub(crate) mode: super::AnnotationCheck,
    read: HashMap<String, Arc<Summary>>,
    /// The summaries this load used (what the next file holds).
    used: HashMap<String, Arc<Summary>>,
    /// Summaries of module files, by path, for this load.
    modules: HashMap<PathBuf, Option<Arc<Summary>>>,
}

impl Effects {
    /// Reads `cache_dir/effects.json` (anything unusable reads as empty).
    pub(crate) fn read(cache_dir: &Path, mode: super::AnnotationCheck) -> Self {
        let read = crate::bounded_read::read_regular(&cache_dir.join(FILE), MAX_BYTES)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<CacheText>(&bytes).ok())
            .filter(|cache| cache.toolhost == WRITTEN_BY)
            .map(|cache| {
                cache
                    .files
                    .into_iter()
                    .map(|(digest, summary)| (digest, Arc::new(summary)))
                    .collect()
            })
            .unwrap_or_default();
        Self {
            dir: Some(cache_dir.to_path_buf()),
            mode,
            read,
            ..Self::default()
        }
    }

    /// No cache (explicit files, tests): every file is analysed.
    pub(crate) fn uncached(mode: super::AnnotationCheck) -> Self {
        Self {
            mode,
            ..Self::default()
        }
    }

    /// The analysis of `bytes`: `parsed` when discovery just made it, else the cached one,
    /// else made now. `None` when the file does not parse (its effects are unknown).
    pub(crate) fn summary(
        &mut self,
        bytes: &[u8],
        parsed: Option<&Arc<Summary>>,
    ) -> Option<Arc<Summary>> {
        let digest = digest(bytes);
        let summary = match (parsed, self.used.get(&digest), self.read.get(&digest)) {
            (Some(parsed), _, _) => parsed.clone(),
            (None, Some(used), _) => used.clone(),
            (None, None, Some(read)) => read.clone(),
            (None, None, None) => analyse(bytes)?,
        };
        self.used.insert(digest, summary.clone());
        Some(summary)
    }

    /// The analysis of the module file at `path` (read once per load).
    pub(crate) fn summary_of_file(&mut self, path: &Path) -> Option<Arc<Summary>> {
        if let Some(known) = self.modules.get(path) {
            return known.clone();
        }
        let summary = crate::bounded_read::read_regular(path, crate::discovery::MAX_FILE_BYTES)
            .ok()
            .and_then(|bytes| self.summary(&bytes, None));
        self.modules.insert(path.to_path_buf(), summary.clone());
        summary
    }

    /// Writes the summaries this load used when they differ from what was read.
    pub(crate) fn write_if_changed(&self) {
        let Some(dir) = &self.dir else { return };
        let same = self.used.len() == self.read.len()
            && self
                .used
                .keys()
                .all(|digest| self.read.contains_key(digest));
        if same {
            return;
        }
        let cache = CacheText {
            toolhost: WRITTEN_BY.to_string(),
            files: self
                .used
                .iter()
                .map(|(digest, summary)| (digest.clone(), Summary::clone(summary)))
                .collect(),
        };
        let written = serde_json::to_string(&cache)
            .map_err(std::io::Error::other)
            .and_then(|text| write_atomically(dir, FILE, &text));
        if let Err(e) = written {
            tracing::debug!("cannot write {}: {e}", dir.join(FILE).display());
        }
    }
}

/// The digest of a file's bytes, as the cache's key.
fn digest(bytes: &[u8]) -> String {
    let mut hasher = crate::digest::hasher();
    bytes.hash(&mut hasher);
    format!("{:016x}{:x}", hasher.finish(), bytes.len())
}

/// Parses and analyses `bytes` on a large-stack thread (`full_moon` recurses once per
/// nesting level; the caller may be on a small async stack). `None` when the text is not
/// UTF-8, is nested deeper than the sandbox allows, or does not parse.
fn analyse(bytes: &[u8]) -> Option<Arc<Summary>> {
    let text = crate::lua::strip_bom_str(std::str::from_utf8(bytes).ok()?);
    if crate::lua::depth::prescan(text.as_bytes(), crate::lua::depth::MAX_NESTING).is_some() {
        return None;
    }
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("toolhost-effects".into())
            .stack_size(crate::discovery::PARSER_STACK_BYTES)
            .spawn_scoped(scope, || {
                std::panic::catch_unwind(|| {
                    let ast = full_moon::parse_fallible(text, full_moon::LuaVersion::lua54())
                        .into_result()
                        .ok()?;
                    super::summarise_bounded(&ast, text.len())
                })
                .ok()
                .flatten()
            })
            .ok()?
            .join()
            .ok()
            .flatten()
    })
}
