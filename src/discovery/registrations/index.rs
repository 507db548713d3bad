//! The registration cache's file: a JSON index on its first line (each file's key and
//! records, each record's schema replaced by where its text is), then every schema's JSON
//! text, one after the other. The index is read typed in one pass: each record is parsed
//! once, where it stands, into the [`ToolRecord`] a warm start builds the registry from.
//! The schemas, most of the bytes, are not scanned at all.

use super::super::members::Members;
use super::key::Key;
use crate::lua::register::record::ToolRecord;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The shape of the file this version writes. Raised whenever the index changes shape, so
/// that a file of an earlier shape reads as empty rather than half understood (the toolhost
/// version alone does not change between builds of a branch).
pub(super) const FORMAT: u32 = 2;

/// A file's entry as read: its key, whether it required a module, and its records.
#[derive(Debug, Deserialize)]
pub(super) struct ReadEntry {
    /// The key the file's run had.
    pub key: Key,
    /// Its top level required a module (the key covers its `require` folders).
    pub required: bool,
    /// Its records, in registration order (empty once handed out by a lookup).
    pub tools: Vec<ReadTool>,
    /// Its records were handed out (to build registry entries): to write the entry back,
    /// they are read again from the file's text.
    #[serde(skip)]
    pub handed_out: bool,
}

/// One record as read, and where its schema's text is among the schemas (byte offsets
/// from the first byte after the index).
#[derive(Debug, Deserialize)]
pub(super) struct ReadTool {
    /// The record, its `schema` left `null`.
    pub record: ToolRecord,
    /// Where its schema's text is.
    pub schema: [usize; 2],
}

/// The index as read.
#[derive(Deserialize)]
struct Index<'a> {
    toolhost: &'a str,
    format: u32,
    // Owned paths: a path with a quote or a backslash is escaped in the file.
    files: Members<String, ReadEntry>,
}

/// The entries of a cache file, and where its schemas start, when it is a file of this
/// version and shape (`None`: anything else, read as "nothing cached").
pub(super) fn read(text: &str) -> Option<(Vec<(String, ReadEntry)>, usize)> {
    // The parse finds where the index ends (no separate scan for the newline).
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Index<'_>>();
    let index = stream.next()?.ok()?;
    let end = stream.byte_offset();
    let usable = text[end..].starts_with('\n')
        && index.toolhost == env!("CARGO_PKG_VERSION")
        && index.format == FORMAT;
    usable.then_some((index.files.0, end + 1))
}

/// One file's entry to write: its records and their schemas' text.
pub(super) struct EntryToWrite<'a> {
    /// The key of the file's run.
    pub key: Key,
    /// Its top level required a module.
    pub required: bool,
    /// Each record and its schema's text.
    pub tools: Vec<(&'a ToolRecord, &'a str)>,
}

/// The index as written (files in path order, so that the same entries give the same
/// file).
#[derive(Serialize)]
struct IndexToWrite<'a> {
    toolhost: &'a str,
    format: u32,
    files: BTreeMap<&'a str, FileToWrite<'a>>,
}

/// One file's entry as written.
#[derive(Serialize)]
struct FileToWrite<'a> {
    key: Key,
    required: bool,
    tools: Vec<ToolToWrite<'a>>,
}

/// One record as written: the record, and its schema's place among the schemas.
#[derive(Serialize)]
struct ToolToWrite<'a> {
    record: &'a ToolRecord,
    schema: [usize; 2],
}

/// The file's text for `entries` (by path): the index line, then the schemas, both in
/// path order.
pub(super) fn text<'a>(
    entries: impl Iterator<Item = (&'a str, EntryToWrite<'a>)>,
) -> Option<String> {
    let entries: BTreeMap<&str, EntryToWrite<'_>> = entries.collect();
    let mut schemas = String::new();
    let mut files = BTreeMap::new();
    for (path, entry) in entries {
        let tools = entry.tools.into_iter().map(|(record, schema)| {
            let start = schemas.len();
            schemas.push_str(schema);
            ToolToWrite {
                record,
                schema: [start, schemas.len()],
            }
        });
        let file = FileToWrite {
            key: entry.key,
            required: entry.required,
            tools: tools.collect(),
        };
        files.insert(path, file);
    }
    let index = IndexToWrite {
        toolhost: env!("CARGO_PKG_VERSION"),
        format: FORMAT,
        files,
    };
    let mut text = serde_json::to_string(&index).ok()?;
    text.push('\n');
    text.push_str(&schemas);
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::{EntryToWrite, FORMAT, Key, ToolRecord, read, text};

    const SCHEMA: &str = r#"{"parameters":{"type":"object","properties":{}}}"#;

    fn record(name: &str) -> ToolRecord {
        let text = format!(r#"{{"name":"{name}","toolset":"t","registration":{{}},"line":3}}"#);
        serde_json::from_str(&text).expect("a record")
    }

    /// A file of this version holding `a.lua` (two tools) and `b.lua` (one).
    fn written() -> String {
        let (a, b, c) = (record("a"), record("b"), record("c"));
        let entries = [
            (
                "/t/b.lua",
                EntryToWrite {
                    key: Key::from_digest(2),
                    required: true,
                    tools: vec![(&c, "{}")],
                },
            ),
            (
                "/t/a.lua",
                EntryToWrite {
                    key: Key::from_digest(1),
                    required: false,
                    tools: vec![(&a, SCHEMA), (&b, "{}")],
                },
            ),
        ];
        text(entries.into_iter()).expect("serialises")
    }

    #[test]
    fn a_written_file_reads_back_its_entries() {
        let text = written();
        let (entries, schemas_at) = read(&text).expect("readable");
        let (path, a) = &entries[0];
        assert_eq!(path, "/t/a.lua", "written in path order");
        assert_eq!((a.key, a.required), (Key::from_digest(1), false));
        let names: Vec<_> = a.tools.iter().map(|t| t.record.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        let [start, end] = a.tools[0].schema;
        assert_eq!(&text[schemas_at + start..schemas_at + end], SCHEMA);
        assert_eq!(a.tools[0].record.line, 3);
        assert_eq!(entries[1].1.key, Key::from_digest(2));
    }

    #[test]
    fn a_file_of_the_previous_format_reads_as_nothing() {
        let text = written();
        let tag = format!(r#""format":{FORMAT},"#);
        assert!(text.contains(&tag));
        assert!(read(&text.replacen(&tag, "", 1)).is_none(), "no tag");
        let earlier = format!(r#""format":{},"#, FORMAT - 1);
        assert!(
            read(&text.replacen(&tag, &earlier, 1)).is_none(),
            "earlier tag"
        );
    }

    #[test]
    fn a_file_of_another_version_reads_as_nothing() {
        let text = written().replacen(env!("CARGO_PKG_VERSION"), "0.0.0-other", 1);
        assert!(read(&text).is_none());
    }

    #[test]
    fn a_file_cut_anywhere_in_its_index_reads_as_nothing() {
        let text = written();
        let newline = text.find('\n').expect("an index line");
        for cut in 0..=newline {
            assert!(read(&text[..cut]).is_none(), "cut at {cut}");
        }
        // Cut among the schemas: the index still reads (a schema out of the file's
        // bounds is found at lookup).
        assert!(read(&text[..text.len() - 1]).is_some());
    }
}
