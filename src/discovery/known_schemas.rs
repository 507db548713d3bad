//! `<cache_dir>/schemas.json`: digests of the parameters schemas that compiled, so that a
//! warm start checks registrations without compiling a single JSON Schema (compiling was
//! most of the CPU and memory of loading a tool). A schema whose digest is unknown is
//! compiled at registration as before, and its error is a load error of its file; a known
//! one is compiled at the tool's first call. Like the verdict cache, the file is advisory:
//! missing, corrupt or written by another toolhost version means "nothing known"; a forged
//! entry can only postpone a schema's compilation to its first call.

use super::cache::write_atomically;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::Path;

const FILE: &str = "schemas.json";
/// Largest file read (a digest is 16 hex digits: this is millions of schemas).
const MAX_BYTES: u64 = 64 * 1024 * 1024;

/// The digests known to compile (read) and those seen compiling in this load (to write).
#[derive(Debug, Default)]
pub(crate) struct KnownSchemas {
    known: BTreeSet<u64>,
    current: BTreeSet<u64>,
}

impl KnownSchemas {
    /// Reads `cache_dir/schemas.json`; anything unusable gives an empty set.
    pub(crate) fn read(cache_dir: &Path) -> Self {
        let known = crate::bounded_read::read_regular(&cache_dir.join(FILE), MAX_BYTES)
            .ok()
            .and_then(|bytes| parse(&bytes))
            .unwrap_or_default();
        Self {
            known,
            current: BTreeSet::new(),
        }
    }

    /// Whether a schema with this digest compiled before; counts it as current.
    pub(crate) fn take_known(&mut self, digest: u64) -> bool {
        let known = self.known.contains(&digest);
        if known {
            self.current.insert(digest);
        }
        known
    }

    /// Records that a schema with this digest compiled.
    pub(crate) fn compiled(&mut self, digest: u64) {
        self.current.insert(digest);
    }

    /// Writes the digests of this load's schemas when they differ from what was read; best
    /// effort (a failure costs the next start its compile-free path, nothing else).
    pub(crate) fn write_if_changed(&self, cache_dir: &Path) {
        if self.current == self.known {
            return;
        }
        let digests: Vec<String> = self.current.iter().map(|d| format!("{d:016x}")).collect();
        let text = json!({ "toolhost": env!("CARGO_PKG_VERSION"), "compiled": digests });
        if let Err(e) = write_atomically(cache_dir, FILE, &text.to_string()) {
            tracing::debug!("cannot write {FILE} in {}: {e}", cache_dir.display());
        }
    }
}

/// The digests in the file, when it is one this version wrote.
fn parse(bytes: &[u8]) -> Option<BTreeSet<u64>> {
    let value: Value = serde_json::from_slice(bytes).ok()?;
    // Another version may compile (or digest) schemas differently.
    if value.get("toolhost")?.as_str()? != env!("CARGO_PKG_VERSION") {
        return None;
    }
    value
        .get("compiled")?
        .as_array()?
        .iter()
        .map(|d| u64::from_str_radix(d.as_str()?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_round_trip_through_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = KnownSchemas::read(dir.path());
        assert!(!first.take_known(7));
        first.compiled(7);
        first.write_if_changed(dir.path());
        let mut second = KnownSchemas::read(dir.path());
        assert!(second.take_known(7));
        assert!(!second.take_known(8));
    }

    #[test]
    fn unusable_files_mean_nothing_known() {
        assert_eq!(parse(b"{\"compiled\":[\"07\"]}"), None);
        assert_eq!(parse(b"not json"), None);
        assert_eq!(
            parse(br#"{"toolhost":"0.0.0-other","compiled":["07"]}"#),
            None
        );
        let bad = format!(
            "{{\"toolhost\":\"{}\",\"compiled\":[\"zz\"]}}",
            env!("CARGO_PKG_VERSION")
        );
        assert_eq!(parse(bad.as_bytes()), None);
    }
}
