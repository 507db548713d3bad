//! A strict JSON reader for `effects.json`, in one pass over the text: values the caller
//! does not need now are only delimited (checked, not built), strings without escapes are
//! borrowed from the text. serde's `RawValue` delimited each entry through its generic
//! deserialiser (about ten instructions a byte, most of a warm start's effects cost) and
//! the entries used were then parsed a second time.
//!
//! Every function answers `None` on text that is not JSON (or nested deeper than
//! [`MAX_DEPTH`]); the caller then treats what it was reading as absent.

use std::borrow::Cow;
use std::ops::Range;

/// Deepest nesting of arrays and objects delimited (the cache's own entries nest about
/// five deep; a hostile file must not exhaust the stack).
const MAX_DEPTH: usize = 64;

/// A position in JSON text.
pub(super) struct Reader<'t> {
    text: &'t str,
    at: usize,
}

impl<'t> Reader<'t> {
    /// A reader at the start of `text`.
    pub(super) fn new(text: &'t str) -> Self {
        Self { text, at: 0 }
    }

    /// The byte offset reached.
    pub(super) fn at(&self) -> usize {
        self.at
    }

    /// The offset where the next value starts (after white space); `None` at the end.
    pub(super) fn start(&mut self) -> Option<usize> {
        self.peek()?;
        Some(self.at)
    }

    fn bytes(&self) -> &'t [u8] {
        self.text.as_bytes()
    }

    /// The next byte that is not white space (not consumed).
    fn peek(&mut self) -> Option<u8> {
        while let Some(&byte) = self.bytes().get(self.at) {
            match byte {
                b' ' | b'\n' | b'\r' | b'\t' => self.at += 1,
                _ => return Some(byte),
            }
        }
        None
    }

    /// Consumes `byte` (after white space).
    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// Whether only white space is left.
    pub(super) fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    /// A string: borrowed when it has no escapes.
    pub(super) fn string(&mut self) -> Option<Cow<'t, str>> {
        self.eat(b'"')?;
        let start = self.at;
        let escaped = self.string_end()?;
        if !escaped {
            // Both ends are ASCII quotes: char boundaries.
            return self.text.get(start..self.at - 1).map(Cow::Borrowed);
        }
        let quoted = self.text.get(start - 1..self.at)?;
        serde_json::from_str::<String>(quoted).ok().map(Cow::Owned)
    }

    /// Moves past the closing quote of the string whose opening quote was just consumed;
    /// whether it has escapes (`None`: it does not end, or holds a control character).
    fn string_end(&mut self) -> Option<bool> {
        let bytes = self.bytes();
        let mut escaped = false;
        loop {
            let found = self.at + first_special(bytes.get(self.at..)?)?;
            self.at = found + 1;
            match bytes[found] {
                b'"' => return Some(escaped),
                b'\\' => {
                    // The escaped byte cannot end the string; serde_json checks the
                    // escape ([`Reader::string`]).
                    escaped = true;
                    bytes.get(self.at)?;
                    self.at += 1;
                }
                _ => return None,
            }
        }
    }

    /// The members of an object, each key passed to `member`, which must read its value.
    pub(super) fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, Cow<'t, str>) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        loop {
            let key = self.string()?;
            self.eat(b':')?;
            member(self, key)?;
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The elements of an array, each read by `element`.
    pub(super) fn array(&mut self, mut element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.at += 1;
            return Some(());
        }
        loop {
            element(self)?;
            match self.peek()? {
                b',' => self.at += 1,
                b']' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// `null` (consumed: `Some(true)`), or something else (not consumed: `Some(false)`).
    pub(super) fn null(&mut self) -> Option<bool> {
        if self.peek()? != b'n' {
            return Some(false);
        }
        self.literal(b"null")?;
        Some(true)
    }

    /// Any value, checked and skipped: its place in the text.
    pub(super) fn value(&mut self) -> Option<Range<usize>> {
        self.peek()?;
        let start = self.at;
        self.skip()?;
        Some(start..self.at)
    }

    /// Checks and skips one value: a loop over its tokens with the open containers as
    /// bits (object 1, array 0), not a recursion, so a skip costs a few instructions a
    /// byte (a warm start skips every summary of the cache).
    fn skip(&mut self) -> Option<()> {
        let mut open: u64 = 0;
        let mut depth = 0;
        loop {
            // A value.
            match self.peek()? {
                opening @ (b'{' | b'[') => {
                    if depth == MAX_DEPTH {
                        return None;
                    }
                    self.at += 1;
                    let object = opening == b'{';
                    let closing = if object { b'}' } else { b']' };
                    if self.peek()? != closing {
                        open = open << 1 | u64::from(object);
                        depth += 1;
                        if object {
                            self.key()?;
                        }
                        continue;
                    }
                    self.at += 1;
                }
                b'"' => drop(self.string()?),
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                _ => self.number()?,
            }
            // What follows it: the next member or element, or the end of containers.
            loop {
                if depth == 0 {
                    return Some(());
                }
                let object = open & 1 == 1;
                match self.peek()? {
                    b',' => {
                        self.at += 1;
                        if object {
                            self.key()?;
                        }
                        break;
                    }
                    b'}' if object => {}
                    b']' if !object => {}
                    _ => return None,
                }
                self.at += 1;
                open >>= 1;
                depth -= 1;
            }
        }
    }

    /// An object's key and its colon.
    fn key(&mut self) -> Option<()> {
        self.string()?;
        self.eat(b':')
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at + word.len();
        (self.bytes().get(self.at..end)? == word).then(|| self.at = end)
    }

    /// A number, by JSON's grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn number(&mut self) -> Option<()> {
        let bytes = self.bytes();
        let digits = |at: &mut usize| {
            let start = *at;
            while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
                *at += 1;
            }
            (*at > start).then_some(())
        };
        let mut at = self.at;
        if bytes.get(at) == Some(&b'-') {
            at += 1;
        }
        match bytes.get(at)? {
            b'0' => at += 1,
            b'1'..=b'9' => digits(&mut at)?,
            _ => return None,
        }
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            digits(&mut at)?;
        }
        if matches!(bytes.get(at), Some(b'e' | b'E')) {
            at += 1;
            if matches!(bytes.get(at), Some(b'+' | b'-')) {
                at += 1;
            }
            digits(&mut at)?;
        }
        self.at = at;
        Some(())
    }
}

/// Where the first quote, backslash or control character of `bytes` is. Eight bytes at
/// a time (each test is a zero-byte test on a word): most strings of the cache are names
/// of a few bytes or paths of tens, and a search per string (`memchr`) cost more in its
/// set-up than the scan.
fn first_special(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGHS: u64 = ONES << 7;
    let mut at = 0;
    while let Some(chunk) = bytes
        .get(at..at + 8)
        .and_then(|c| <[u8; 8]>::try_from(c).ok())
    {
        let word = u64::from_le_bytes(chunk);
        let quote = word ^ (ONES * u64::from(b'"'));
        let backslash = word ^ (ONES * u64::from(b'\\'));
        // A byte's high bit is set where it is zero (below 0x20 for `word` itself); only
        // bytes above the first match can be flagged wrongly (a borrow), so the lowest
        // flag is exact.
        let flags = (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (word.wrapping_sub(ONES * 0x20) & !word);
        let flags = flags & HIGHS;
        if flags != 0 {
            return Some(at + (flags.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let rest = bytes.get(at..)?;
    let found = rest
        .iter()
        .position(|&byte| byte == b'"' || byte == b'\\' || byte < 0x20)?;
    Some(at + found)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the reader takes `text` as exactly one value.
    fn whole(text: &str) -> bool {
        let mut reader = Reader::new(text);
        reader.value().is_some() && reader.at_end()
    }

    #[test]
    fn what_serde_json_reads_the_reader_reads() {
        for text in [
            r#"{"a":[1,-2.5e+3,true,false,null,"x\"y\\\u00e9"],"b":{}}"#,
            " [ ] ",
            "0",
            r#""\ud83d\ude00""#,
            r#"{"k" : { "n" : [ [ ] , { } ] } }"#,
        ] {
            assert!(
                serde_json::from_str::<serde_json::Value>(text).is_ok(),
                "{text}"
            );
            assert!(whole(text), "{text}");
        }
    }

    #[test]
    fn what_serde_json_refuses_the_reader_refuses() {
        for text in [
            "",
            "{",
            r#"{"a":1"#,
            r#"{"a" 1}"#,
            r#"{"a":1,}"#,
            "[1,]",
            "[1 2]",
            "01",
            "1.",
            "-",
            "1e",
            "tru",
            "nul",
            r#""unterminated"#,
            "\"a\u{1}b\"",
            r#""\x""#,
            r#""\ud800""#,
            "{1:2}",
        ] {
            assert!(
                serde_json::from_str::<serde_json::Value>(text).is_err(),
                "{text}"
            );
            assert!(!whole(text), "{text}");
        }
    }

    #[test]
    fn the_first_quote_backslash_or_control_character_is_found_at_any_place() {
        for len in 0..40 {
            for special in [b'"', b'\\', 0x00, 0x1f] {
                for at in 0..len {
                    // UTF-8 continuation bytes and every other byte around it.
                    let mut bytes: Vec<u8> = (0..len)
                        .map(|i| [b'a', 0xc3, 0xa9, b' ', 0x7f, b'!', b']'][i % 7])
                        .collect();
                    bytes[at] = special;
                    assert_eq!(first_special(&bytes), Some(at), "{bytes:?}");
                    if at + 1 < len {
                        bytes[at + 1] = b'"';
                        assert_eq!(first_special(&bytes), Some(at), "{bytes:?}");
                    }
                }
            }
            let plain: Vec<u8> = (0..len).map(|i| [b'a', 0xff, 0x20, b'#'][i % 4]).collect();
            assert_eq!(first_special(&plain), None);
        }
    }

    #[test]
    fn nesting_deeper_than_the_limit_is_refused_without_exhausting_the_stack() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(!whole(&deep));
        let shallow = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(whole(&shallow));
    }

    #[test]
    fn a_string_without_escapes_is_borrowed_and_one_with_escapes_decoded() {
        let mut reader = Reader::new(r#""plain" "a\nb""#);
        assert!(matches!(reader.string(), Some(Cow::Borrowed("plain"))));
        assert_eq!(reader.string().as_deref(), Some("a\nb"));
    }
}
