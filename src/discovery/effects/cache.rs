//! The analyses of this load, and `<cache_dir>/effects.json`: file digest → [`Summary`],
//! and each file's resolved effects ([`Resolved`] as written, [`super::known`] as read;
//! believed only while what they were resolved from still holds). Like the other caches it is advisory: missing, corrupt or
//! written by another version means "nothing cached"; it is written (atomically) only when
//! this load used something it did not hold. Keyed by content, so an edited file or module
//! is analysed again.

use super::digest::Digest;
use super::lookups::{DirsKey, Found, Lookups};
use super::resolved::{self, Resolved, Trail};
use super::stored::Stored;
use super::summary::Summary;
use crate::discovery::cache::write_atomically;
use crate::lua::SearchDir;
use crate::registry::EffectSite;
use foldhash::{HashMap, HashSet};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const FILE: &str = "effects.json";
/// Largest cache read.
const MAX_BYTES: u64 = 64 * 1024 * 1024;

/// What the analysis knows in this load, and how annotations are checked.
#[derive(Debug, Default)]
pub(crate) struct Effects {
    /// `effects.json`'s directory; `None`: nothing is read or written.
    dir: Option<PathBuf>,
    /// How a contradiction is treated.
    pub(crate) mode: super::AnnotationCheck,
    /// What was read (summaries still text, resolved entries typed).
    stored: Stored,
    /// The summaries this load parsed or made, by digest.
    summaries: HashMap<Digest, Arc<Summary>>,
    /// The digests of the summaries this load used (what the next file holds).
    used: HashSet<Digest>,
    /// The resolved entries this load made, by key (each replaces any read under it).
    fresh: HashMap<String, Resolved<'static>>,
    /// Module look-ups and module files, once per load.
    lookups: Lookups,
}

impl Effects {
    /// Reads `cache_dir/effects.json` (anything unusable reads as empty).
    pub(crate) fn read(cache_dir: &Path, mode: super::AnnotationCheck) -> Self {
        let stored = crate::bounded_read::read_regular(&cache_dir.join(FILE), MAX_BYTES)
            .map(Stored::parse)
            .unwrap_or_default();
        Self {
            dir: Some(cache_dir.to_path_buf()),
            mode,
            stored,
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

    /// The analysis of `bytes` (whose digest is `digest`): `parsed` when discovery just
    /// made it, else the cached one, else made now. `None` when the file does not parse
    /// (its effects are unknown).
    pub(crate) fn summary(
        &mut self,
        digest: Digest,
        bytes: &[u8],
        parsed: Option<&Arc<Summary>>,
    ) -> Option<Arc<Summary>> {
        if let Some(parsed) = parsed {
            self.summaries.insert(digest, parsed.clone());
        }
        self.summary_of(digest, || Some(bytes))
    }

    /// The summary of the bytes with `digest` (which `bytes` gives when it must be made).
    fn summary_of<'b>(
        &mut self,
        digest: Digest,
        bytes: impl FnOnce() -> Option<&'b [u8]>,
    ) -> Option<Arc<Summary>> {
        let summary = match self.summaries.get(&digest) {
            Some(known) => known.clone(),
            None => {
                let summary = match self.stored_summary(digest) {
                    Some(read) => read,
                    None => analyse(bytes()?)?,
                };
                self.summaries.insert(digest, summary.clone());
                summary
            }
        };
        self.used.insert(digest);
        Some(summary)
    }

    /// The summary the cache holds for `digest`, parsed now. An entry that does not parse
    /// is forgotten (the file is analysed, and the next cache holds that analysis).
    fn stored_summary(&mut self, digest: Digest) -> Option<Arc<Summary>> {
        let place = self.stored.files.get(&digest)?;
        match serde_json::from_str::<Summary>(self.stored.at(place)) {
            Ok(summary) => Some(Arc::new(summary)),
            Err(_) => {
                self.stored.files.remove(&digest);
                None
            }
        }
    }

    /// The analysis of the module file at canonical `path` (read once per load), with the
    /// digest of its bytes (`None`: unreadable).
    pub(super) fn summary_of_file(
        &mut self,
        path: &Path,
    ) -> (Option<Arc<Summary>>, Option<Digest>) {
        let file = self.lookups.file(path);
        let Some(digest) = file.digest else {
            return (None, None);
        };
        let bytes = file.bytes.take();
        let summary = self.summary_of(digest, || bytes.as_deref());
        // Made or found: the bytes are not needed again in this load.
        (summary, Some(digest))
    }

    /// The key of the search folders `dirs` (`None`: a path is not UTF-8, and nothing
    /// resolved in them is memoised or kept).
    pub(super) fn dirs_key(&mut self, dirs: &[SearchDir]) -> Option<DirsKey> {
        self.lookups.dirs_key(dirs)
    }

    /// Where `require(name)` leads from `dirs` (memoised per load by `key`).
    pub(super) fn find_module(
        &mut self,
        key: Option<&DirsKey>,
        dirs: &[SearchDir],
        name: &str,
    ) -> Found {
        self.lookups.find(key, dirs, name)
    }

    /// The cached sites of each of `tools` for the file with content `digest` shown as
    /// `shown`, searched in `dirs` (whose key is `dirs_key`): `Some` only when every tool
    /// has an entry and everything they were resolved from still holds.
    pub(super) fn resolved_sites(
        &mut self,
        (digest, shown): (Digest, &str),
        dirs: (&DirsKey, &[SearchDir]),
        tools: &[&str],
    ) -> Option<Vec<Vec<EffectSite>>> {
        let (texts, known, files) = self.stored.split();
        let entry = known.find(digest, shown, texts)?;
        if !entry.holds(texts, dirs, &mut self.lookups) {
            return None;
        }
        let sites = entry.take_sites(texts, tools)?;
        entry.kept = true;
        // What the entry rests on stays in the next cache.
        for depended in std::iter::once(digest).chain(entry.module_digests()) {
            if files.contains_key(&depended) || self.summaries.contains_key(&depended) {
                self.used.insert(depended);
            }
        }
        Some(sites)
    }

    /// Keeps `tools`' freshly resolved sites for the file with content `digest` shown as
    /// `shown`, searched in the folders `dirs_key` names, as `trail` followed them
    /// (nothing when the trail could not be kept).
    pub(super) fn keep_resolved(
        &mut self,
        (digest, shown): (Digest, &str),
        dirs_key: &DirsKey,
        trail: Trail,
        tools: &[(&str, &[EffectSite])],
    ) {
        let Some(followed) = trail.followed else {
            return;
        };
        let (texts, known, _) = self.stored.split();
        if let Some(read) = known.find(digest, shown, texts) {
            read.kept = false;
        }
        self.fresh.insert(
            resolved::key(digest, shown),
            Resolved::new(dirs_key.digest, followed, tools),
        );
    }

    /// Writes the entries this load used when they differ from what was read.
    pub(crate) fn write_if_changed(&self) {
        let Some(dir) = &self.dir else { return };
        let kept = self.stored.resolved.iter().filter(|(_, e)| e.kept).count();
        let same = self.fresh.is_empty()
            && kept == self.stored.resolved.len()
            && self.used.len() == self.stored.files.len()
            && self
                .used
                .iter()
                .all(|digest| self.stored.files.contains_key(digest));
        if same {
            return;
        }
        let written = self
            .text()
            .map_err(std::io::Error::other)
            .and_then(|text| write_atomically(dir, FILE, &text));
        if let Err(e) = written {
            tracing::debug!("cannot write {}: {e}", dir.join(FILE).display());
        }
    }

    /// The next cache's text: the summaries used and the resolved entries kept or made,
    /// each read entry as its own text.
    fn text(&self) -> serde_json::Result<String> {
        let mut files: BTreeMap<String, Cow<'_, str>> = BTreeMap::new();
        for digest in &self.used {
            let text = match self.stored.files.get(digest) {
                Some(place) => Cow::Borrowed(self.stored.at(place)),
                None => match self.summaries.get(digest) {
                    Some(summary) => Cow::Owned(serde_json::to_string(&**summary)?),
                    None => continue,
                },
            };
            files.insert(digest.text(), text);
        }
        let mut resolved: BTreeMap<String, Cow<'_, str>> = BTreeMap::new();
        let texts = self.stored.texts();
        for (digest, entry) in self.stored.resolved.iter().filter(|(_, e)| e.kept) {
            let key = resolved::key(digest, entry.shown(texts));
            resolved.insert(key, Cow::Borrowed(self.stored.at(&entry.place)));
        }
        for (key, made) in &self.fresh {
            resolved.insert(key.clone(), Cow::Owned(serde_json::to_string(made)?));
        }
        super::stored::write(pairs(&files), pairs(&resolved))
    }
}

/// Each entry of `entries` as (key, text).
fn pairs<'e>(
    entries: &'e BTreeMap<String, Cow<'_, str>>,
) -> impl Iterator<Item = (&'e str, &'e str)> {
    entries.iter().map(|(key, text)| (key.as_str(), &**text))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The host reads the cache on a thread of its own while discovery runs.
    #[test]
    fn the_effects_read_can_move_to_another_thread() {
        fn movable<T: Send + 'static>() {}
        movable::<Effects>();
    }
}
