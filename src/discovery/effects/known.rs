//! The resolved entries of a read `effects.json` ([`super::resolved`] has the form
//! written), read typed with serde as the cache is read: each tool's sites already built
//! (their texts shared), the digests as numbers, every other string as its place in the
//! text. A
//! warm start then only checks what an entry rests on ([`Entry::holds`]) and takes its
//! sites: no second parse per file on the load's path.

use super::super::members::Members;
use super::EffectSite;
use super::digest::Digest;
use super::lookups::{DirsKey, Lookups};
use super::resolved::parse_sites;
use super::spans::{Span, Spans, Texts};
use super::text::{Str, place_in};
use crate::lua::SearchDir;
use foldhash::HashMap;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

/// One module name a resolution followed, and what it found.
#[derive(Debug)]
enum Followed {
    /// The name led to the module file at `path` (canonical), shown as `shown`, whose
    /// bytes had `digest` (`None`: unreadable).
    Module {
        name: Span,
        path: Span,
        shown: Span,
        digest: Option<Digest>,
    },
    /// The look-up of the name failed with `message`.
    Missing { name: Span, message: Span },
}

/// A file's resolved effects as read.
#[derive(Debug)]
pub(super) struct Entry {
    /// The file's path as shown (the rest of the key).
    shown: Span,
    /// Its text in the cache (written back as it is while it holds).
    pub(super) place: Range<usize>,
    /// The digest of the search folders' [`super::lookups::dirs_key`].
    dirs: Digest,
    /// Each module name followed.
    followed: Vec<Followed>,
    /// Each tool's name and sites (`None`: its stored sites are damaged).
    tools: Vec<(Span, Option<Vec<EffectSite>>)>,
    /// This load used it (it goes into the next cache).
    pub(super) kept: bool,
}

/// The resolved entries read, by the digest of their file's content.
#[derive(Debug, Default)]
pub(super) struct Known {
    /// The first entry of each digest.
    first: HashMap<Digest, Entry>,
    /// The others (one content at several paths).
    others: Vec<(Digest, Entry)>,
}

impl Known {
    /// How many entries were read.
    pub(super) fn len(&self) -> usize {
        self.first.len() + self.others.len()
    }

    /// The entry of the file with `digest` shown as `shown`.
    pub(super) fn find(
        &mut self,
        digest: Digest,
        shown: &str,
        texts: Texts<'_>,
    ) -> Option<&mut Entry> {
        let is_it = |entry: &Entry| texts.str(entry.shown) == shown;
        match self.first.get(&digest) {
            Some(entry) if is_it(entry) => self.first.get_mut(&digest),
            Some(_) => self
                .others
                .iter_mut()
                .find(|(other, entry)| *other == digest && is_it(entry))
                .map(|(_, entry)| entry),
            None => None,
        }
    }

    /// Every entry, with its file's digest.
    pub(super) fn iter(&self) -> impl Iterator<Item = (Digest, &Entry)> {
        let first = self.first.iter().map(|(digest, entry)| (*digest, entry));
        first.chain(self.others.iter().map(|(digest, entry)| (*digest, entry)))
    }

    fn insert(&mut self, digest: Digest, entry: Entry) {
        match self.first.entry(digest) {
            std::collections::hash_map::Entry::Occupied(_) => self.others.push((digest, entry)),
            std::collections::hash_map::Entry::Vacant(vacant) => {
                vacant.insert(entry);
            }
        }
    }
}

impl Entry {
    /// The file's path as shown.
    pub(super) fn shown<'s>(&self, texts: Texts<'s>) -> &'s str {
        texts.str(self.shown)
    }

    /// Whether everything this was resolved from still holds for a file searched in
    /// `search` (whose key is `dirs_key`): the same folders, each module name leading to
    /// the same file, each such file with the same digest.
    pub(super) fn holds(
        &self,
        texts: Texts<'_>,
        (dirs_key, search): (&DirsKey, &[SearchDir]),
        lookups: &mut Lookups,
    ) -> bool {
        self.dirs == dirs_key.digest
            && self.followed.iter().all(|followed| match followed {
                Followed::Module {
                    name,
                    path,
                    shown,
                    digest,
                } => lookups.still_leads(
                    (dirs_key, search),
                    texts.str(*name),
                    (texts.str(*path), texts.str(*shown)),
                    *digest,
                ),
                Followed::Missing { name, message } => {
                    lookups.still_misses((dirs_key, search), texts.str(*name), texts.str(*message))
                }
            })
    }

    /// The sites of each of `tools`, in order, taken out of the entry; `None` (nothing
    /// taken) when a tool has no entry, or damaged sites.
    pub(super) fn take_sites(
        &mut self,
        texts: Texts<'_>,
        tools: &[&str],
    ) -> Option<Vec<Vec<EffectSite>>> {
        if !tools.iter().all(|tool| self.place(texts, tool).is_some()) {
            return None;
        }
        let mut taken: Vec<Vec<EffectSite>> = Vec::with_capacity(tools.len());
        for (at, tool) in tools.iter().enumerate() {
            // The same tool asked for twice: a copy of what was taken for it.
            let sites = match tools[..at].iter().position(|earlier| earlier == tool) {
                Some(earlier) => taken[earlier].clone(),
                None => {
                    let place = self.place(texts, tool)?;
                    self.tools[place].1.take().unwrap_or_default()
                }
            };
            taken.push(sites);
        }
        Some(taken)
    }

    /// Where `tool`'s sites are, when they are there.
    fn place(&self, texts: Texts<'_>, tool: &str) -> Option<usize> {
        self.tools
            .iter()
            .position(|(name, sites)| sites.is_some() && texts.str(*name) == tool)
    }

    /// The module digests this depends on (kept in the cache beside it).
    pub(super) fn module_digests(&self) -> impl Iterator<Item = Digest> + '_ {
        self.followed.iter().filter_map(|followed| match followed {
            Followed::Module { digest, .. } => *digest,
            Followed::Missing { .. } => None,
        })
    }
}

/// One resolved entry as written ([`super::resolved::Resolved`]): fields in any order,
/// each once, others ignored; strings borrowed from the text.
#[derive(Deserialize)]
struct EntryText<'t> {
    dirs: Digest,
    #[serde(borrow)]
    followed: Vec<FollowedText<'t>>,
    #[serde(borrow)]
    texts: Vec<Str<'t>>,
    #[serde(borrow)]
    tools: Members<Str<'t>, Str<'t>>,
}

/// `{"Module":[name,path,shown,digest|null]}` or `{"Missing":[name,message]}`.
#[derive(Deserialize)]
enum FollowedText<'t> {
    Module(
        #[serde(borrow)] Str<'t>,
        #[serde(borrow)] Str<'t>,
        #[serde(borrow)] Str<'t>,
        Option<Digest>,
    ),
    Missing(#[serde(borrow)] Str<'t>, #[serde(borrow)] Str<'t>),
}

/// The `resolved` object of the cache `text`, its entries delimited (`members`); each is
/// read typed now, its sites built. `None` unless every entry is of the shape written.
pub(super) fn read<'t>(
    text: &'t str,
    members: Members<Str<'t>, &'t RawValue>,
    spans: &mut Spans<'t>,
) -> Option<Known> {
    let mut known = Known::default();
    for (key, raw) in members.0 {
        let (digest, shown) = split_key(key.0)?;
        let shown = spans.span(shown);
        // Borrowed from `raw`, itself a slice of `text`: the spans name places in `text`.
        let read: EntryText<'t> = serde_json::from_str(raw.get()).ok()?;
        let entry = entry(read, spans, shown, place_in(text, raw.get()));
        known.insert(digest, entry);
    }
    Some(known)
}

/// A key's digest and path as shown ([`super::resolved::key`]).
fn split_key(key: Cow<'_, str>) -> Option<(Digest, Cow<'_, str>)> {
    let space = memchr::memchr(b' ', key.as_bytes())?;
    let digest = Digest::parse(&key[..space])?;
    let shown = match key {
        Cow::Borrowed(key) => Cow::Borrowed(&key[space + 1..]),
        Cow::Owned(key) => Cow::Owned(key[space + 1..].to_string()),
    };
    Some((digest, shown))
}

/// The entry `read` at `place`, its strings as spans, its texts shared and its sites built.
fn entry<'t>(
    read: EntryText<'t>,
    spans: &mut Spans<'t>,
    shown: Span,
    place: Range<usize>,
) -> Entry {
    let texts: Vec<Arc<str>> = read
        .texts
        .into_iter()
        .map(|text| spans.shared(text.0))
        .collect();
    let followed = read
        .followed
        .into_iter()
        .map(|followed| match followed {
            FollowedText::Module(name, path, shown, digest) => Followed::Module {
                name: spans.span(name.0),
                path: spans.span(path.0),
                shown: spans.span(shown.0),
                digest,
            },
            FollowedText::Missing(name, message) => Followed::Missing {
                name: spans.span(name.0),
                message: spans.span(message.0),
            },
        })
        .collect();
    let tools = read
        .tools
        .0
        .into_iter()
        .map(|(name, sites)| (spans.span(name.0), parse_sites(&sites.0, &texts)))
        .collect();
    Entry {
        shown,
        place,
        dirs: read.dirs,
        followed,
        tools,
        kept: false,
    }
}
