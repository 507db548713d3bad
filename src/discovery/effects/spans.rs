//! The strings of a read `effects.json`: each as its place ([`Span`]) in the text, or,
//! when it had escapes, in one buffer of decoded strings, so reading an entry allocates no
//! string; and the texts sites name, shared ([`Spans::shared`]).

use foldhash::HashMap;
use std::borrow::Cow;
use std::sync::Arc;

/// A string of the cache read: where it is in the text, or (when it had escapes) in the
/// decoded strings.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Span {
    start: u32,
    end: u32,
}

/// Marks a [`Span`] of the decoded strings (the text read is below 64 MiB, far below it).
pub(super) const DECODED: u32 = 1 << 31;

/// The strings of a read cache, by [`Span`].
#[derive(Debug, Clone, Copy)]
pub(super) struct Texts<'s> {
    text: &'s str,
    decoded: &'s str,
}

impl<'s> Texts<'s> {
    /// The strings of `text`, those with escapes decoded in `decoded`.
    pub(super) fn new(text: &'s str, decoded: &'s str) -> Self {
        Self { text, decoded }
    }

    /// The string `span` names.
    pub(super) fn str(self, span: Span) -> &'s str {
        let (text, start) = match span.start & DECODED {
            0 => (self.text, span.start),
            _ => (self.decoded, span.start & !DECODED),
        };
        text.get(start as usize..span.end as usize).unwrap_or("")
    }
}

/// Makes the [`Span`]s of a text being read, and shares the texts sites name.
pub(super) struct Spans<'t> {
    text: &'t str,
    decoded: String,
    shared: HashMap<&'t str, Arc<str>>,
}

impl<'t> Spans<'t> {
    /// Spans of `text`.
    pub(super) fn new(text: &'t str) -> Self {
        Self {
            text,
            decoded: String::new(),
            shared: HashMap::default(),
        }
    }

    /// The strings with escapes, decoded (what the spans of such strings name).
    pub(super) fn into_decoded(self) -> String {
        self.decoded
    }

    /// The span of `string`, read from the text.
    pub(super) fn span(&mut self, string: Cow<'t, str>) -> Span {
        match string {
            Cow::Borrowed(borrowed) => {
                let start = borrowed.as_ptr() as usize - self.text.as_ptr() as usize;
                Span {
                    start: start as u32,
                    end: (start + borrowed.len()) as u32,
                }
            }
            Cow::Owned(owned) => {
                let start = self.decoded.len();
                self.decoded.push_str(&owned);
                Span {
                    start: start as u32 | DECODED,
                    end: self.decoded.len() as u32,
                }
            }
        }
    }

    /// `string` as a shared text (one allocation per distinct text of the file: a
    /// module's sites name the same texts in every entry that requires it).
    pub(super) fn shared(&mut self, string: Cow<'t, str>) -> Arc<str> {
        match string {
            Cow::Borrowed(borrowed) => self
                .shared
                .entry(borrowed)
                .or_insert_with(|| borrowed.into())
                .clone(),
            Cow::Owned(owned) => owned.into(),
        }
    }
}
