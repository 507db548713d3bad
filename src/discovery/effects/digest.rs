//! The digest that names a file's content (and a search-folder list) in `effects.json`.

use std::hash::{Hash, Hasher};

/// The digest of a file's bytes, as the cache's key: the hash in 16 hex digits, then the
/// length in hex (written by hand: `format!` cost more than hashing a typical file).
pub(super) fn digest(bytes: &[u8]) -> String {
    let mut hasher = crate::digest::hasher();
    bytes.hash(&mut hasher);
    let mut text = String::with_capacity(32);
    push_hex(&mut text, hasher.finish(), 16);
    let len = bytes.len() as u64;
    let digits = (64 - len.leading_zeros()).div_ceil(4).max(1) as usize;
    push_hex(&mut text, len, digits);
    text
}

/// Appends the low `digits` hex digits of `n`.
fn push_hex(text: &mut String, n: u64, digits: usize) {
    for shift in (0..digits).rev() {
        let digit = ((n >> (shift * 4)) & 0xf) as u32;
        text.push(char::from_digit(digit, 16).unwrap_or('0'));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_is_the_hash_in_sixteen_hex_digits_then_the_length_in_hex() {
        for bytes in [&b""[..], b"x", &[7u8; 4096][..], &[1u8; 255][..]] {
            let mut hasher = crate::digest::hasher();
            bytes.hash(&mut hasher);
            let expected = format!("{:016x}{:x}", hasher.finish(), bytes.len());
            assert_eq!(digest(bytes), expected);
        }
    }
}
