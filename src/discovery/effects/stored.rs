//! `effects.json` as text: read in one pass down to each entry's place in the text (an entry
//! is parsed only when a load needs it, so a warm start builds no file's [`Summary`]), and
//! written back from those places (what is not re-serialised stays byte-identical).
//!
//! [`Summary`]: super::summary::Summary

use foldhash::HashMap;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::ops::Range;

/// Whose entries the file holds: this toolhost version and the analysis rules' revision
/// (bumped whenever the rules or the file's shape change, so a cache written under older
/// rules by a build of the same version is not trusted).
const WRITTEN_BY: &str = concat!(env!("CARGO_PKG_VERSION"), "/effects-3");

#[derive(Deserialize)]
struct Borrowed<'a> {
    toolhost: &'a str,
    #[serde(borrow)]
    files: HashMap<String, &'a RawValue>,
    #[serde(borrow)]
    resolved: HashMap<String, &'a RawValue>,
}

#[derive(Serialize)]
struct Written<'a> {
    toolhost: &'a str,
    files: BTreeMap<&'a str, &'a RawValue>,
    resolved: BTreeMap<&'a str, &'a RawValue>,
}

/// The entries of a read `effects.json`: file digest → summary, and resolved key →
/// resolved effects, each as its place in `text`.
#[derive(Debug, Default)]
pub(super) struct Stored {
    text: String,
    pub(super) files: HashMap<String, Range<usize>>,
    pub(super) resolved: HashMap<String, Range<usize>>,
}

impl Stored {
    /// The entries of `bytes`; empty when it is not a whole cache written by this build's
    /// rules.
    pub(super) fn parse(bytes: Vec<u8>) -> Self {
        let Ok(text) = String::from_utf8(bytes) else {
            return Self::default();
        };
        let (files, resolved) = match serde_json::from_str::<Borrowed<'_>>(&text) {
            Ok(cache) if cache.toolhost == WRITTEN_BY => {
                let place = |raw: &RawValue| {
                    let start = raw.get().as_ptr() as usize - text.as_ptr() as usize;
                    start..start + raw.get().len()
                };
                let places = |entries: HashMap<String, &RawValue>| {
                    entries
                        .into_iter()
                        .map(|(key, raw)| (key, place(raw)))
                        .collect()
                };
                (places(cache.files), places(cache.resolved))
            }
            _ => return Self::default(),
        };
        Self {
            text,
            files,
            resolved,
        }
    }

    /// The text of the entry at `place`.
    pub(super) fn at(&self, place: &Range<usize>) -> &str {
        self.text.get(place.clone()).unwrap_or("null")
    }
}

/// The text of a cache holding `files` and `resolved` (each entry's JSON text, by key).
pub(super) fn write(
    files: BTreeMap<&str, &RawValue>,
    resolved: BTreeMap<&str, &RawValue>,
) -> serde_json::Result<String> {
    serde_json::to_string(&Written {
        toolhost: WRITTEN_BY,
        files,
        resolved,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).expect("JSON")
    }

    #[test]
    fn an_entry_reads_back_as_its_exact_text() {
        let entry = raw(r#"{"whole":{"sites":[["fs.read","fs.read",3]]}}"#);
        let text = write(
            BTreeMap::from([("d1", &*entry)]),
            BTreeMap::from([("d1 x.lua", &*raw("[1, 2]"))]),
        )
        .expect("written");
        let stored = Stored::parse(text.into_bytes());
        assert_eq!(stored.at(&stored.files["d1"]), entry.get());
        assert_eq!(stored.at(&stored.resolved["d1 x.lua"]), "[1, 2]");
    }

    #[test]
    fn an_escaped_key_is_read() {
        let text = write(
            BTreeMap::new(),
            BTreeMap::from([("d1 a\"b\\c.lua", &*raw("1"))]),
        )
        .expect("written");
        let stored = Stored::parse(text.into_bytes());
        assert_eq!(stored.at(&stored.resolved["d1 a\"b\\c.lua"]), "1");
    }

    #[test]
    fn another_revision_reads_as_empty() {
        let text = format!(
            r#"{{"toolhost":"{}/effects-2","files":{{"d":{{}}}},"resolved":{{}}}}"#,
            env!("CARGO_PKG_VERSION")
        );
        let stored = Stored::parse(text.into_bytes());
        assert!(stored.files.is_empty() && stored.resolved.is_empty());
    }

    #[test]
    fn truncated_or_garbage_text_reads_as_empty() {
        let whole = write(BTreeMap::from([("d", &*raw("{}"))]), BTreeMap::new()).expect("text");
        for bytes in [
            whole.as_bytes()[..whole.len() - 3].to_vec(),
            b"\xff\xfe garbage".to_vec(),
            b"[]".to_vec(),
            Vec::new(),
        ] {
            let stored = Stored::parse(bytes);
            assert!(stored.files.is_empty() && stored.resolved.is_empty());
        }
    }
}
