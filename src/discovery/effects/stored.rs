//! `effects.json` as text: read with serde_json, which delimits each file summary and
//! keeps its place in the text (a borrowed `RawValue`: a summary is parsed only when a
//! load misses and needs it, so a warm start builds none) and reads each resolved entry
//! typed, ready to check ([`super::known`]); written back from those places (what is not
//! re-serialised stays byte-identical).

use super::super::members::Members;
use super::digest::Digest;
use super::known::{self, Known};
use super::spans::{DECODED, Spans, Texts};
use super::text::{Str, place_in};
use foldhash::HashMap;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::ops::Range;

/// Whose entries the file holds: this toolhost version and the analysis rules' revision
/// (bumped whenever the rules or the file's shape change, so a cache written under older
/// rules by a build of the same version is not trusted). `effects-4`: digests are read
/// as numbers, and an entry not of the shape written makes the whole file unusable.
const WRITTEN_BY: &str = concat!(env!("CARGO_PKG_VERSION"), "/effects-4");

/// The entries of a read `effects.json`: file digest → its summary's place in the text,
/// and the resolved entries, read.
#[derive(Debug, Default)]
pub(super) struct Stored {
    text: String,
    /// The strings that had escapes, decoded.
    decoded: String,
    /// Each summary's place in `text`.
    pub(super) files: HashMap<Digest, Range<usize>>,
    /// The resolved entries.
    pub(super) resolved: Known,
}

impl Stored {
    /// The entries of `bytes`; empty when it is not a whole cache written by this build's
    /// rules (not UTF-8, not JSON, truncated, another revision, an entry of another shape).
    pub(super) fn parse(bytes: Vec<u8>) -> Self {
        let Ok(text) = String::from_utf8(bytes) else {
            return Self::default();
        };
        if text.len() >= DECODED as usize {
            return Self::default();
        }
        let mut spans = Spans::new(&text);
        let Some((files, resolved)) = read(&text, &mut spans) else {
            return Self::default();
        };
        let decoded = spans.into_decoded();
        Self {
            text,
            decoded,
            files,
            resolved,
        }
    }

    /// The text of the summary at `place`.
    pub(super) fn at(&self, place: &Range<usize>) -> &str {
        self.text.get(place.clone()).unwrap_or("null")
    }

    /// The strings of the text read.
    pub(super) fn texts(&self) -> Texts<'_> {
        Texts::new(&self.text, &self.decoded)
    }

    /// The strings of the text read, the resolved entries (to change while reading their
    /// strings) and the summaries' places.
    pub(super) fn split(&mut self) -> (Texts<'_>, &mut Known, &HashMap<Digest, Range<usize>>) {
        let texts = Texts::new(&self.text, &self.decoded);
        (texts, &mut self.resolved, &self.files)
    }
}

/// The cache's top level as read: each summary only delimited (kept as its text, parsed
/// when a load misses and needs it), each resolved entry delimited and then read typed
/// ([`known::read`]). Fields in any order, each once; others are ignored.
#[derive(Deserialize)]
struct CacheText<'t> {
    #[serde(borrow)]
    toolhost: Str<'t>,
    #[serde(borrow)]
    files: Members<Digest, &'t RawValue>,
    #[serde(borrow)]
    resolved: Members<Str<'t>, &'t RawValue>,
}

/// The summaries' places and the resolved entries of `text`; `None` unless it is a whole
/// cache of this revision.
fn read<'t>(
    text: &'t str,
    spans: &mut Spans<'t>,
) -> Option<(HashMap<Digest, Range<usize>>, Known)> {
    let cache: CacheText<'t> = serde_json::from_str(text).ok()?;
    if cache.toolhost.0 != WRITTEN_BY {
        return None;
    }
    let files = (cache.files.0.into_iter())
        .map(|(digest, summary)| (digest, place_in(text, summary.get())))
        .collect();
    let resolved = known::read(text, cache.resolved, spans)?;
    Some((files, resolved))
}

/// The text of a cache holding `files` and `resolved` (each entry's JSON text, by key, in
/// the order given).
pub(super) fn write<'e>(
    files: impl IntoIterator<Item = (&'e str, &'e str)>,
    resolved: impl IntoIterator<Item = (&'e str, &'e str)>,
) -> serde_json::Result<String> {
    let mut text = String::from("{\"toolhost\":");
    text.push_str(&serde_json::to_string(WRITTEN_BY)?);
    push_object(&mut text, "files", files)?;
    push_object(&mut text, "resolved", resolved)?;
    text.push('}');
    Ok(text)
}

/// Appends `,"name":{...}` with `entries` (keys escaped, values as they are).
fn push_object<'e>(
    text: &mut String,
    name: &str,
    entries: impl IntoIterator<Item = (&'e str, &'e str)>,
) -> serde_json::Result<()> {
    text.push_str(",\"");
    text.push_str(name);
    text.push_str("\":{");
    for (at, (key, value)) in entries.into_iter().enumerate() {
        if at > 0 {
            text.push(',');
        }
        text.push_str(&serde_json::to_string(key)?);
        text.push(':');
        text.push_str(value);
    }
    text.push('}');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(n: u8) -> String {
        Digest::of(&[n]).text()
    }

    fn entry(dirs: &str) -> String {
        format!(r#"{{"dirs":"{dirs}","followed":[],"texts":[],"tools":{{"t":""}}}}"#)
    }

    #[test]
    fn a_summary_reads_back_as_its_exact_text() {
        let summary = r#"{"whole":{"sites":[["fs.read","fs.read",3]]}}"#;
        let key = format!("{} x.lua", digest(1));
        let text =
            write([(&*digest(1), summary)], [(&*key, &*entry(&digest(2)))]).expect("written");
        let stored = Stored::parse(text.into_bytes());
        let place = &stored.files[&Digest::of(&[1])];
        assert_eq!(stored.at(place), summary);
        assert_eq!(stored.resolved.len(), 1);
    }

    #[test]
    fn an_escaped_key_is_read() {
        let key = format!("{} a\"b\\c.lua", digest(1));
        let text = write([], [(&*key, &*entry(&digest(2)))]).expect("written");
        let mut stored = Stored::parse(text.into_bytes());
        let (texts, resolved, _) = stored.split();
        assert!(
            resolved
                .find(Digest::of(&[1]), "a\"b\\c.lua", texts)
                .is_some()
        );
    }

    #[test]
    fn another_revision_reads_as_empty() {
        let text = format!(
            r#"{{"toolhost":"{}/effects-3","files":{{"{}":{{}}}},"resolved":{{}}}}"#,
            env!("CARGO_PKG_VERSION"),
            digest(1)
        );
        let stored = Stored::parse(text.into_bytes());
        assert!(stored.files.is_empty() && stored.resolved.len() == 0);
    }

    #[test]
    fn truncated_or_garbage_text_reads_as_empty() {
        let key = format!("{} x.lua", digest(1));
        let whole = write([(&*digest(1), "{}")], [(&*key, &*entry(&digest(2)))]).expect("text");
        assert_eq!(Stored::parse(whole.clone().into_bytes()).files.len(), 1);
        for bytes in [
            whole.as_bytes()[..whole.len() - 3].to_vec(),
            whole.replace(&*key, "no digest here").into_bytes(),
            whole.replace(&digest(2), "not a digest").into_bytes(),
            whole
                .replace("\"followed\":[]", "\"followed\":[1]")
                .into_bytes(),
            format!("{whole} trailing").into_bytes(),
            b"\xff\xfe garbage".to_vec(),
            b"[]".to_vec(),
            Vec::new(),
        ] {
            let stored = Stored::parse(bytes);
            assert!(stored.files.is_empty() && stored.resolved.len() == 0);
        }
    }

    /// A cache with one summary and one resolved entry that follows a module.
    fn a_whole_cache() -> String {
        let key = format!("{} tools/é \"x\".lua", digest(1));
        let resolved = format!(
            r#"{{"dirs":"{}","followed":[{{"Module":["m","/a/m.lua","lib/m.lua","{}"]}},{{"Missing":["n","not found"]}}],"texts":["fs.write","fs.write","lib/m.lua"],"tools":{{"w":"0,1,2,3"}}}}"#,
            digest(2),
            digest(3)
        );
        write(
            [(
                &*digest(3),
                r#"{"whole":{"sites":[["fs.write","fs.write",3]]}}"#,
            )],
            [(&*key, &*resolved)],
        )
        .expect("written")
    }

    #[test]
    fn every_truncation_of_a_cache_reads_as_empty() {
        let whole = a_whole_cache();
        assert_eq!(Stored::parse(whole.clone().into_bytes()).resolved.len(), 1);
        for end in 0..whole.len() {
            let stored = Stored::parse(whole.as_bytes()[..end].to_vec());
            assert!(
                stored.files.is_empty() && stored.resolved.len() == 0,
                "{end}"
            );
        }
    }

    #[test]
    fn any_byte_of_a_cache_changed_reads_without_a_panic() {
        let whole = a_whole_cache().into_bytes();
        for at in 0..whole.len() {
            for byte in [b'"', b'\\', b'{', b']', b',', b'0', 0xff, 0x01] {
                let mut damaged = whole.clone();
                damaged[at] = byte;
                let mut stored = Stored::parse(damaged);
                // Whatever was read can be looked at.
                let (texts, resolved, _) = stored.split();
                let _ = resolved.find(Digest::of(&[1]), "tools/é \"x\".lua", texts);
            }
        }
    }

    #[test]
    fn a_resolved_entry_reads_back_as_its_exact_text() {
        let whole = a_whole_cache();
        let stored = Stored::parse(whole.clone().into_bytes());
        let (_, entry) = stored.resolved.iter().next().expect("an entry");
        let text = stored.at(&entry.place);
        assert!(text.starts_with("{\"dirs\"") && text.ends_with("\"0,1,2,3\"}}"));
        assert!(whole.contains(&format!(":{text}}}")));
    }

    #[test]
    fn an_entry_of_another_shape_reads_as_empty() {
        let whole = a_whole_cache();
        for (from, to) in [
            (r#"{"Missing":["n","not found"]}"#, r#"{"Missing":["n"]}"#),
            (
                r#"{"Missing":["n","not found"]}"#,
                r#"{"Missing":["n","x","y"]}"#,
            ),
            (r#"{"Missing":["n","not found"]}"#, r#"{"Gone":["n","x"]}"#),
            (
                r#"{"Missing":["n","not found"]}"#,
                r#"{"Missing":["n","x"],"Module":[]}"#,
            ),
            (r#""w":"0,1,2,3""#, r#""w":[0,1,2,3]"#),
            (r#""texts":["#, r#""texts":7,"texts":["#),
            (r#""toolhost":"#, r#""toolhost":"x","toolhost":"#),
        ] {
            assert!(whole.contains(from), "{from}");
            let stored = Stored::parse(whole.replacen(from, to, 1).into_bytes());
            assert!(
                stored.files.is_empty() && stored.resolved.len() == 0,
                "{to}"
            );
        }
    }

    #[test]
    fn a_field_toolhost_does_not_write_is_ignored() {
        let whole = a_whole_cache().replacen(r#"{"dirs":"#, r#"{"new":[{"a":null}],"dirs":"#, 1);
        let stored = Stored::parse(whole.into_bytes());
        assert_eq!((stored.files.len(), stored.resolved.len()), (1, 1));
    }

    #[test]
    fn escaped_strings_in_an_entry_read_decoded() {
        let whole =
            a_whole_cache().replacen(r#""texts":["fs.write","#, r#""texts":["fs.wr\u0069te","#, 1);
        let mut stored = Stored::parse(whole.into_bytes());
        let (texts, resolved, _) = stored.split();
        let entry = resolved
            .find(Digest::of(&[1]), "tools/é \"x\".lua", texts)
            .expect("the entry (its key escaped too)");
        let sites = entry.take_sites(texts, &["w"]).expect("its sites");
        assert_eq!(&*sites[0][0].effect, "fs.write");
    }

    #[test]
    fn deep_nesting_reads_without_exhausting_the_stack() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        // Only delimited (serde_json skips without recursing): the summary is kept as text.
        let in_summary =
            a_whole_cache().replacen(r#"{"whole":"#, &format!(r#"{{"deep":{deep},"whole":"#), 1);
        let stored = Stored::parse(in_summary.into_bytes());
        assert_eq!((stored.files.len(), stored.resolved.len()), (1, 1));
        // Read typed: not of the shape written (serde_json stops at its depth limit).
        let in_entry =
            a_whole_cache().replacen(r#""followed":["#, &format!(r#""followed":[{deep},"#), 1);
        let stored = Stored::parse(in_entry.into_bytes());
        assert!(stored.files.is_empty() && stored.resolved.len() == 0);
    }
}
