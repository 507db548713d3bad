//! What `effects.json` is read with besides serde's derives: strings borrowed from the
//! text, digests straight from their text, and objects as their members in order (no map
//! built for what is only walked once).

use super::digest::Digest;
use serde::de::{self, Deserialize, Deserializer, Visitor};
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

/// A string of the cache: borrowed from the text read when it has no escapes (serde's own
/// `Cow<str>` always copies), decoded when it has.
#[derive(Debug)]
pub(super) struct Str<'t>(pub(super) Cow<'t, str>);

impl<'de: 't, 't> Deserialize<'de> for Str<'t> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StrVisitor<'t>(PhantomData<Str<'t>>);
        impl<'de: 't, 't> Visitor<'de> for StrVisitor<'t> {
            type Value = Str<'t>;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a string")
            }

            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(text)))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(text.to_string())))
            }

            fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(text)))
            }
        }
        deserializer.deserialize_str(StrVisitor(PhantomData))
    }
}

/// A digest is read from its exact text ([`Digest::parse`]); any other string is an error
/// (the whole cache then reads as empty).
impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Str::deserialize(deserializer)?;
        Digest::parse(&text.0).ok_or_else(|| de::Error::custom("not a digest"))
    }
}

/// Where `part` (a slice of `text`, as serde borrows them) is in `text`.
pub(super) fn place_in(text: &str, part: &str) -> std::ops::Range<usize> {
    let start = (part.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
    start..start.wrapping_add(part.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_without_escapes_is_borrowed_and_one_with_escapes_decoded() {
        let plain: Str<'_> = serde_json::from_str(r#""plain""#).expect("a string");
        assert!(matches!(plain.0, Cow::Borrowed("plain")));
        let escaped: Str<'_> = serde_json::from_str(r#""a\nb""#).expect("a string");
        assert!(matches!(escaped.0, Cow::Owned(_)));
        assert_eq!(escaped.0, "a\nb");
    }

    #[test]
    fn a_digest_reads_only_from_its_exact_text() {
        let digest = Digest::of(b"x");
        let text = serde_json::to_string(&digest.text()).expect("text");
        assert_eq!(serde_json::from_str::<Digest>(&text).ok(), Some(digest));
        for other in [r#""00""#, "1", "null", r#""ABCDEF0123456789ab""#] {
            assert!(serde_json::from_str::<Digest>(other).is_err(), "{other}");
        }
    }
}
