//! A file's resolved effects as `effects.json` keeps them: each of its tools' final sites,
//! and everything the resolution that made them depended on besides the file's own bytes
//! (which are in its key): the search folders, and where each module name it followed led
//! with that module file's digest. A warm start re-checks all of that (memoised look-ups,
//! [`super::lookups`]) and uses the sites only when everything still holds.
//!
//! Read borrowed from the cache's text, and compact: a module's sites repeat in every tool
//! that requires it, so each entry lists its texts once and its sites by index.

use super::EffectSite;
use super::digest::Digest;
use super::lookups::Found;
use serde::Serialize;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::sync::Arc;

/// The cache key of a file's resolved effects: its digest and its path as shown (which the
/// sites name), so one content at two places keeps two entries.
pub(super) fn key(digest: Digest, shown: &str) -> String {
    let mut key = String::with_capacity(33 + shown.len());
    digest.push_to(&mut key);
    key.push(' ');
    key.push_str(shown);
    key
}

/// One module name resolution followed, and what it found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) enum Followed<'a> {
    /// Name, the module's canonical path, its shown path, its file's digest (`None`:
    /// unreadable).
    Module(
        Cow<'a, str>,
        Cow<'a, str>,
        Cow<'a, str>,
        Option<Cow<'a, str>>,
    ),
    /// Name, and the message of the failed look-up.
    Missing(Cow<'a, str>, Cow<'a, str>),
}

impl Followed<'_> {
    fn name(&self) -> &str {
        match self {
            Self::Module(name, ..) | Self::Missing(name, _) => name,
        }
    }
}

/// A file's resolved effects.
#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct Resolved<'a> {
    /// The digest of the search folders it was resolved with ([`super::lookups::dirs_key`]:
    /// the folders' paths are most of an entry otherwise, and a digest is what names the
    /// file's own content too).
    pub(super) dirs: Cow<'a, str>,
    /// Each module name followed, in the order first followed.
    pub(super) followed: Vec<Followed<'a>>,
    /// The texts its sites name.
    pub(super) texts: Vec<Cow<'a, str>>,
    /// Each tool's sites, by tool name, as one text (an array of small arrays costs several
    /// times more to parse): `effect,call,file,line` with the texts by index, `;` between
    /// sites.
    pub(super) tools: BTreeMap<Cow<'a, str>, Cow<'a, str>>,
}

/// What a resolution followed, as it follows it (then kept in a [`Resolved`]).
#[derive(Debug, Default)]
pub(super) struct Trail {
    /// Each name once, in the order first followed; `None` once something was followed
    /// that cannot be written down (a path that is not UTF-8) or that may have failed for
    /// a passing reason: then nothing is kept.
    pub(super) followed: Option<Vec<Followed<'static>>>,
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
    pub(super) fn note(&mut self, name: &str, found: &Found, digest: Option<Digest>) {
        let Some(followed) = &mut self.followed else {
            return;
        };
        if followed.iter().any(|seen| seen.name() == name) {
            return;
        }
        let owned = |text: &str| Cow::Owned(text.to_string());
        let entry = match found {
            Ok((path, shown)) => match path.to_str() {
                Some(path) => {
                    let digest = digest.map(|digest| Cow::Owned(digest.text()));
                    Followed::Module(owned(name), owned(path), owned(shown), digest)
                }
                None => {
                    self.followed = None;
                    return;
                }
            },
            Err(message) => Followed::Missing(owned(name), owned(message)),
        };
        followed.push(entry);
    }
}

impl Resolved<'_> {
    /// The entry for `tools`' sites, resolved in the folders whose key has digest `dirs`,
    /// along `followed`.
    pub(super) fn new<'s>(
        dirs: Digest,
        followed: Vec<Followed<'static>>,
        tools: &[(&str, &'s [EffectSite])],
    ) -> Resolved<'static> {
        let mut texts: Vec<Cow<'static, str>> = Vec::new();
        let mut index: HashMap<&'s str, u32> = HashMap::new();
        let mut text_of = |text: &'s str| -> u32 {
            *index.entry(text).or_insert_with(|| {
                texts.push(Cow::Owned(text.to_string()));
                (texts.len() - 1) as u32
            })
        };
        let mut by_tool = BTreeMap::new();
        for (tool, sites) in tools {
            let mut stored = String::new();
            for site in sites.iter() {
                let fields = [
                    text_of(&site.effect),
                    text_of(&site.call),
                    text_of(&site.file),
                    site.line,
                ];
                if !stored.is_empty() {
                    stored.push(';');
                }
                let _ = write!(
                    stored,
                    "{},{},{},{}",
                    fields[0], fields[1], fields[2], fields[3]
                );
            }
            by_tool.insert(Cow::Owned(tool.to_string()), Cow::Owned(stored));
        }
        Resolved {
            dirs: Cow::Owned(dirs.text()),
            followed,
            texts,
            tools: by_tool,
        }
    }
}

/// The sites of one tool's stored text (`effect,call,file,line;…`, texts by index into
/// `texts`); `None` when it is not of that form. Parsed by hand, byte by byte: this runs
/// for every site of every tool on a warm start, and `split` and `parse` cost several
/// times more.
pub(super) fn parse_sites(stored: &str, texts: &[Arc<str>]) -> Option<Vec<EffectSite>> {
    let mut sites = Vec::new();
    if stored.is_empty() {
        return Some(sites);
    }
    let text = |at: u32| texts.get(at as usize).cloned();
    let mut fields = [0u32; 4];
    let mut field = 0;
    let mut digits = 0;
    for &byte in stored.as_bytes().iter().chain([b';'].iter()) {
        match byte {
            b'0'..=b'9' => {
                let value = fields[field]
                    .checked_mul(10)?
                    .checked_add(u32::from(byte - b'0'))?;
                fields[field] = value;
                digits += 1;
            }
            b',' if digits > 0 && field < 3 => {
                field += 1;
                digits = 0;
            }
            b';' if digits > 0 && field == 3 => {
                let [effect, call, file, line] = fields;
                sites.push(EffectSite {
                    effect: text(effect)?,
                    call: text(call)?,
                    file: text(file)?,
                    line,
                });
                fields = [0; 4];
                field = 0;
                digits = 0;
            }
            _ => return None,
        }
    }
    Some(sites)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts() -> Vec<Arc<str>> {
        ["env", "env.get", "lib/p.lua"].map(Arc::from).to_vec()
    }

    #[test]
    fn stored_sites_read_back_by_index() {
        let sites = parse_sites("0,1,2,3;0,1,2,14", &texts()).expect("sites");
        assert_eq!(sites.len(), 2);
        assert_eq!(
            (&*sites[1].effect, &*sites[1].file, sites[1].line),
            ("env", "lib/p.lua", 14)
        );
    }

    #[test]
    fn damaged_stored_sites_read_as_none() {
        for damaged in [
            "0,1,2",
            "0,1,2,3,4",
            "0,1,9,3",
            "0,,2,3",
            "0,1,2,3;",
            ";0,1,2,3",
            "a,1,2,3",
            "0,1,2,99999999999",
            "0 ,1,2,3",
        ] {
            assert!(parse_sites(damaged, &texts()).is_none(), "{damaged}");
        }
    }

    #[test]
    fn no_stored_sites_are_no_sites() {
        assert_eq!(parse_sites("", &texts()), Some(Vec::new()));
    }
}
