//! `effects.json` as text: read in one pass ([`super::json`]), which records each file
//! summary's place in the text (a summary is parsed only when a load misses and needs it,
//! so a warm start builds none) and reads each resolved entry typed, ready to check
//! ([`super::known`]); written back from those places (what is not re-serialised stays
//! byte-identical).

use super::digest::Digest;
use super::json::Reader;
use super::known::{self, Known};
use super::spans::{DECODED, Spans, Texts};
use foldhash::HashMap;
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

/// The summaries' places and the resolved entries of `text`; `None` unless it is a whole
/// cache of this revision.
fn read<'t>(
    text: &'t str,
    spans: &mut Spans<'t>,
) -> Option<(HashMap<Digest, Range<usize>>, Known)> {
    let mut reader = Reader::new(text);
    let mut written_by = None;
    let mut files = None;
    let mut resolved = None;
    reader.object(|reader, key| {
        match &*key {
            "toolhost" if written_by.is_none() => written_by = Some(reader.string()?),
            "files" if files.is_none() => files = Some(read_files(reader)?),
            "resolved" if resolved.is_none() => resolved = Some(known::read(reader, spans)?),
            "toolhost" | "files" | "resolved" => return None,
            _ => {
                reader.value()?;
            }
        }
        Some(())
    })?;
    if !reader.at_end() || written_by.as_deref() != Some(WRITTEN_BY) {
        return None;
    }
    Some((files?, resolved?))
}

/// The place of each summary, by digest.
fn read_files(reader: &mut Reader<'_>) -> Option<HashMap<Digest, Range<usize>>> {
    let mut files = HashMap::default();
    reader.object(|reader, key| {
        let digest = Digest::parse(&key)?;
        files.insert(digest, reader.value()?);
        Some(())
    })?;
    Some(files)
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
}
