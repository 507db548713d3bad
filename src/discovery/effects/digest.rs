//! The digest that names a file's content (and a search-folder list) in `effects.json`.
//!
//! Held as numbers ([`Digest`]): a warm start compares the digests its cache entries name
//! with those of the files as they are now, and text digests cost a formatted `String` per
//! file and a string comparison per check. The text form (the hash in 16 hex digits, then
//! the length in hex) is made only when a cache is written.

use std::hash::{Hash, Hasher};

/// The digest of some bytes: their hash (`crate::digest`'s fixed-seed hasher) and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Digest {
    hash: u64,
    len: u64,
}

impl Digest {
    /// The digest of `bytes`.
    pub(crate) fn of(bytes: &[u8]) -> Self {
        let mut hasher = crate::digest::hasher();
        bytes.hash(&mut hasher);
        Self {
            hash: hasher.finish(),
            len: bytes.len() as u64,
        }
    }

    /// Its text: the hash in 16 hex digits, then the length in hex (written by hand:
    /// `format!` cost more than hashing a typical file).
    pub(crate) fn text(&self) -> String {
        let mut text = String::with_capacity(32);
        self.push_to(&mut text);
        text
    }

    /// Appends [`Digest::text`] to `text`.
    pub(crate) fn push_to(&self, text: &mut String) {
        push_hex(text, self.hash, 16);
        push_hex(text, self.len, len_digits(self.len));
    }

    /// The digest whose [`Digest::text`] is exactly `text` (lower-case hex, the length
    /// without leading zeros); `None` for any other text.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let bytes = text.as_bytes();
        if bytes.len() < 17 || bytes.len() > 32 {
            return None;
        }
        let (hash, len) = bytes.split_at(16);
        let digest = Self {
            hash: parse_hex(hash)?,
            len: parse_hex(len)?,
        };
        // One text per digest: a length written with leading zeros is not this digest's.
        (len.len() == len_digits(digest.len)).then_some(digest)
    }
}

/// How many hex digits the length takes (at least one).
fn len_digits(len: u64) -> usize {
    (64 - len.leading_zeros()).div_ceil(4).max(1) as usize
}

/// Appends the low `digits` hex digits of `n`.
fn push_hex(text: &mut String, n: u64, digits: usize) {
    for shift in (0..digits).rev() {
        let digit = ((n >> (shift * 4)) & 0xf) as u32;
        text.push(char::from_digit(digit, 16).unwrap_or('0'));
    }
}

/// The value of 1 to 16 lower-case hex digits.
fn parse_hex(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    let mut value = 0u64;
    for &digit in digits {
        let nibble = NIBBLES[usize::from(digit)];
        if nibble > 0xf {
            return None;
        }
        value = value << 4 | u64::from(nibble);
    }
    Some(value)
}

/// Each byte's value as a lower-case hex digit (`0xff`: not one). A table: a warm start
/// reads a few digests per cached file.
const NIBBLES: [u8; 256] = {
    let mut table = [0xff; 256];
    let mut at = 0;
    while at < 16 {
        table[b"0123456789abcdef"[at] as usize] = at as u8;
        at += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_is_the_hash_in_sixteen_hex_digits_then_the_length_in_hex() {
        for bytes in [&b""[..], b"x", &[7u8; 4096][..], &[1u8; 255][..]] {
            let mut hasher = crate::digest::hasher();
            bytes.hash(&mut hasher);
            let expected = format!("{:016x}{:x}", hasher.finish(), bytes.len());
            assert_eq!(Digest::of(bytes).text(), expected);
        }
    }

    #[test]
    fn a_digest_text_parses_back_to_its_digest() {
        for bytes in [&b""[..], b"x", &[7u8; 4096][..]] {
            let digest = Digest::of(bytes);
            assert_eq!(Digest::parse(&digest.text()), Some(digest));
        }
    }

    #[test]
    fn any_other_text_is_no_digest() {
        let text = Digest::of(b"x").text();
        for other in [
            String::new(),
            text[..16].to_string(),
            text.to_uppercase(),
            format!("{}0{}", &text[..16], &text[16..]),
            format!("{text} "),
            format!("{}g", &text[..16]),
            format!("{}{}", &text[..16], "1".repeat(17)),
        ] {
            assert_eq!(Digest::parse(&other), None, "{other}");
        }
    }
}
