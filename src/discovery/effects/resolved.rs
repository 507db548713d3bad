//! A file's resolved effects as `effects.json` keeps them: each of its tools' final sites,
//! and everything the resolution that made them depended on besides the file's own bytes
//! (which are in its key): the search folders, and where each module name it followed led
//! with that module file's digest. A warm start re-checks all of that (memoised look-ups,
//! [`super::lookups`]) and uses the sites only when everything still holds.

use super::EffectSite;
use super::lookups::{Found, Lookups};
use crate::lua::SearchDir;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The cache key of a file's resolved effects: its digest and its path as shown (which the
/// sites name), so one content at two places keeps two entries.
pub(super) fn key(digest: &str, shown: &str) -> String {
    format!("{digest} {shown}")
}

/// One module name resolution followed, and what it found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Followed {
    /// The name as required.
    pub(super) name: String,
    /// Where it led, or why it was not found.
    pub(super) found: FoundText,
}

/// [`Found`] as text, with the module file's digest (`None`: unreadable).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) enum FoundText {
    /// Canonical path, shown path, the file's digest.
    Module(String, String, Option<String>),
    /// The message of the failed look-up.
    Missing(String),
}

/// A file's resolved effects.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct Resolved {
    /// The search folders it was resolved with ([`super::lookups::dirs_key`]).
    pub(super) dirs: String,
    /// Each module name followed, in the order first followed.
    pub(super) followed: Vec<Followed>,
    /// Each tool's sites, by tool name.
    pub(super) tools: BTreeMap<String, Vec<StoredSite>>,
}

/// An [`EffectSite`] as stored: `[effect, call, file, line]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct StoredSite(String, String, String, u32);

impl From<&EffectSite> for StoredSite {
    fn from(site: &EffectSite) -> Self {
        Self(
            site.effect.clone(),
            site.call.clone(),
            site.file.clone(),
            site.line,
        )
    }
}

impl From<StoredSite> for EffectSite {
    fn from(StoredSite(effect, call, file, line): StoredSite) -> Self {
        Self {
            effect,
            call,
            file,
            line,
        }
    }
}

/// What a resolution followed, as it follows it (then kept in a [`Resolved`]).
#[derive(Debug, Default)]
pub(super) struct Trail {
    /// Each name once, in the order first followed; `None` once something was followed
    /// that cannot be written down (a path that is not UTF-8): then nothing is cached.
    pub(super) followed: Option<Vec<Followed>>,
}

impl Trail {
    /// A trail that records.
    pub(super) fn recording() -> Self {
        Self {
            followed: Some(Vec::new()),
        }
    }

    /// Makes this trail one that is not kept.
    pub(super) fn forget(&mut self) {
        self.followed = None;
    }

    /// Notes that `name` led to `found` (a module with `digest`).
    pub(super) fn note(&mut self, name: &str, found: &Found, digest: Option<&str>) {
        let Some(followed) = &mut self.followed else {
            return;
        };
        if followed.iter().any(|seen| seen.name == name) {
            return;
        }
        let text = match found {
            Ok((path, shown)) => match path.to_str() {
                Some(path) => {
                    FoundText::Module(path.to_string(), shown.clone(), digest.map(String::from))
                }
                None => {
                    self.followed = None;
                    return;
                }
            },
            Err(message) => FoundText::Missing(message.clone()),
        };
        followed.push(Followed {
            name: name.to_string(),
            found: text,
        });
    }
}

impl Resolved {
    /// Whether everything this was resolved from still holds for a file searched in `dirs`
    /// (whose key is `dirs_key`): the same folders, each module name leading to the same
    /// file, each such file with the same digest.
    pub(super) fn holds(&self, dirs_key: &str, dirs: &[SearchDir], lookups: &mut Lookups) -> bool {
        self.dirs == dirs_key
            && self.followed.iter().all(|followed| {
                let now = lookups.find(Some(dirs_key), dirs, &followed.name);
                match (&followed.found, now) {
                    (FoundText::Missing(was), Err(now)) => *was == now,
                    (FoundText::Module(path, shown, digest), Ok((now_path, now_shown))) => {
                        now_path.as_os_str() == std::ffi::OsStr::new(path)
                            && *shown == now_shown
                            && lookups.file(&now_path).digest == *digest
                    }
                    _ => false,
                }
            })
    }

    /// The module digests this depends on (kept in the cache beside it).
    pub(super) fn module_digests(&self) -> impl Iterator<Item = &str> {
        self.followed
            .iter()
            .filter_map(|followed| match &followed.found {
                FoundText::Module(_, _, digest) => digest.as_deref(),
                FoundText::Missing(_) => None,
            })
    }
}
