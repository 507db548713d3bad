//! `toolhost store export` / `import`: every row as JSON lines, one
//! `{"ns": …, "key": …, "value": …}` a line (the value as JSON, not as a string), in
//! (namespace, key) byte order — the same on every backend, so SQLite → export → import
//! into PostgreSQL gives the same rows. An import reads and checks every line first and
//! writes them in one transaction: a bad line (named by its number) writes nothing.

use super::{Row, StoreError, StoreInner};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::io::{BufRead, Write};

/// Rows read per page while exporting.
const PAGE: usize = 500;
/// How much longer than `[store] max_value_bytes` an import line may be: the key, the
/// namespace, and a value written less compactly (escapes, spaces) than the store keeps it.
const LINE_SLACK: usize = 64 * 1024;

/// Why an export or import stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TransferError {
    /// The store refused (unreachable, locked, a row over a limit).
    #[error("{0}")]
    Store(#[from] StoreError),
    /// Reading the input or writing the output failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being read or written.
        what: &'static str,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A line of the import is not a row; nothing was written.
    #[error("line {line}: {message} (nothing was imported)")]
    Line {
        /// The line's number (from 1).
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// A stored value is not JSON (written by something else than toolhost).
    #[error("the value under '{key}' in namespace '{ns}' is not JSON: {message}")]
    NotJson {
        /// Its namespace.
        ns: String,
        /// Its key.
        key: String,
        /// The parser's message.
        message: String,
    },
}

/// One line of the format.
#[derive(Serialize)]
struct OutRow<'a> {
    ns: &'a str,
    key: &'a str,
    value: &'a RawValue,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InRow {
    ns: String,
    key: String,
    value: Box<RawValue>,
}

/// Writes every row of `store` to `out`; how many.
pub(crate) fn export(store: &StoreInner, out: &mut dyn Write) -> Result<usize, TransferError> {
    let mut count = 0;
    let mut after: Option<(String, String)> = None;
    loop {
        let page = store.rows(
            after.as_ref().map(|(ns, key)| (ns.as_str(), key.as_str())),
            PAGE,
        )?;
        for row in &page {
            let value: &RawValue =
                serde_json::from_str(&row.value).map_err(|e| TransferError::NotJson {
                    ns: row.ns.clone(),
                    key: row.key.clone(),
                    message: e.to_string(),
                })?;
            let line = serde_json::to_string(&OutRow {
                ns: &row.ns,
                key: &row.key,
                value,
            })
            .map_err(|e| TransferError::NotJson {
                ns: row.ns.clone(),
                key: row.key.clone(),
                message: e.to_string(),
            })?;
            writeln!(out, "{line}").map_err(|source| TransferError::Io {
                what: "cannot write the export",
                source,
            })?;
            count += 1;
        }
        match page.last() {
            Some(last) if page.len() == PAGE => after = Some((last.ns.clone(), last.key.clone())),
            _ => break,
        }
    }
    out.flush().map_err(|source| TransferError::Io {
        what: "cannot write the export",
        source,
    })?;
    Ok(count)
}

/// Reads every line of `input` (blank lines are skipped), checks each, then writes them
/// all in one transaction; how many rows.
pub(crate) fn import(store: &StoreInner, input: &mut dyn BufRead) -> Result<usize, TransferError> {
    let mut rows = Vec::new();
    let mut text = String::new();
    let mut line = 0;
    // A line is read only this far: a file of one endless line is refused, not buffered.
    let most = store
        .max_value_bytes()
        .saturating_mul(8)
        .saturating_add(LINE_SLACK);
    loop {
        text.clear();
        line += 1;
        let read = std::io::Read::take(&mut *input, most as u64 + 1)
            .read_line(&mut text)
            .map_err(|source| match source.kind() {
                std::io::ErrorKind::InvalidData => TransferError::Line {
                    line,
                    message: "not UTF-8 text".to_string(),
                },
                _ => TransferError::Io {
                    what: "cannot read the import",
                    source,
                },
            })?;
        if read == 0 {
            break;
        }
        if read > most {
            return Err(TransferError::Line {
                line,
                message: format!("longer than {most} bytes"),
            });
        }
        if text.trim().is_empty() {
            continue;
        }
        let bad = |message: String| TransferError::Line { line, message };
        let parsed: InRow = serde_json::from_str(text.trim_end_matches(['\n', '\r']))
            .map_err(|e| bad(format!("not a row {{\"ns\", \"key\", \"value\"}}: {e}")))?;
        // Stored as `set` stores it: compact JSON text.
        let value: serde_json::Value =
            serde_json::from_str(parsed.value.get()).map_err(|e| bad(format!("value: {e}")))?;
        let row = Row {
            ns: parsed.ns,
            key: parsed.key,
            value: value.to_string(),
        };
        store
            .check_row(&row)
            .map_err(|e| bad(format!("'{}' in '{}': {e}", row.key, row.ns)))?;
        rows.push(row);
    }
    store.load(&rows)?;
    Ok(rows.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn import_text(store: &StoreInner, text: &str) -> Result<usize, TransferError> {
        import(store, &mut std::io::Cursor::new(text.as_bytes().to_vec()))
    }

    #[test]
    fn an_export_imports_back_to_the_same_rows_in_byte_order() {
        let store = StoreInner::memory(1 << 20);
        let text = "{\"ns\":\"plugin:a\",\"key\":\"z\",\"value\":{ \"b\" : [1, 2.5] }}\n\
                    \n\
                    {\"ns\":\"builtin\",\"key\":\"\u{e9}\",\"value\":\"x\"}\n\
                    {\"ns\":\"builtin\",\"key\":\"B\",\"value\":null}\n";
        assert_eq!(import_text(&store, text).unwrap(), 3);
        let mut out = Vec::new();
        assert_eq!(export(&store, &mut out).unwrap(), 3);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"ns\":\"builtin\",\"key\":\"B\",\"value\":null}\n\
             {\"ns\":\"builtin\",\"key\":\"\u{e9}\",\"value\":\"x\"}\n\
             {\"ns\":\"plugin:a\",\"key\":\"z\",\"value\":{\"b\":[1,2.5]}}\n"
        );
    }

    #[test]
    fn a_bad_line_is_named_and_nothing_is_imported() {
        let good = "{\"ns\":\"builtin\",\"key\":\"a\",\"value\":1}\n";
        for (bad, expected) in [
            ("not json", "line 2: not a row"),
            ("{\"ns\":\"builtin\",\"key\":\"b\"}", "line 2: not a row"),
            (
                "{\"ns\":\"builtin\",\"key\":\"b\",\"value\":1,\"extra\":2}",
                "unknown field",
            ),
            ("{\"ns\":\"builtin\",\"key\":\"b\",\"value\":\"", "line 2"),
            (
                &format!(
                    "{{\"ns\":\"builtin\",\"key\":\"{}\",\"value\":1}}",
                    "k".repeat(600)
                ),
                "key of 600 bytes",
            ),
        ] {
            let store = StoreInner::memory(1 << 20);
            let error = import_text(&store, &format!("{good}{bad}\n"))
                .unwrap_err()
                .to_string();
            assert!(error.contains(expected), "{bad}: {error}");
            assert!(error.contains("nothing was imported"), "{bad}: {error}");
            assert!(store.rows(None, 10).unwrap().is_empty(), "{bad}: written");
        }
    }

    #[test]
    fn an_endless_line_is_refused_without_reading_it_all() {
        let store = StoreInner::memory(16);
        let endless = std::io::Read::chain(
            std::io::Cursor::new(b"{\"ns\":\"builtin\",\"key\":\"k\",\"value\":\"".to_vec()),
            std::io::repeat(b'x'),
        );
        let error = import(&store, &mut std::io::BufReader::new(endless))
            .unwrap_err()
            .to_string();
        assert!(error.contains("line 1: longer than"), "{error}");
    }
}
