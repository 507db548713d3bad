//! Adding and removing a pack's `[plugins.NAME]` entry in `toolhost.toml` with `toml_edit`,
//! which keeps the operator's comments, order and formatting everywhere else.

use super::super::error::CliError;
use std::path::Path;
use toml_edit::{Array, DocumentMut, Item, Table, value};

/// The configuration file parsed for editing (an empty one when it does not exist yet).
pub(super) fn read(path: &Path) -> Result<DocumentMut, CliError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            return Err(super::super::error::io(format!(
                "cannot read {}",
                path.display()
            ))(e));
        }
    };
    text.parse::<DocumentMut>()
        .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))
}

/// Writes `doc` to `path`, ending with a newline, through a new temporary file beside it:
/// a fresh random name created exclusively, so a link committed in its place is never
/// followed, and a crash leaves the old file. It takes the old file's permissions (a config
/// readable only by its owner stays so); a new config gets the usual 0666 less the umask.
pub(super) fn write(path: &Path, doc: &DocumentMut) -> Result<(), CliError> {
    let fail = super::super::error::io(format!("cannot write {}", path.display()));
    let mut text = doc.to_string();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".toolhost.toml.").suffix(".tmp");
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let outcome = builder.tempfile_in(parent).and_then(|mut temp| {
        std::io::Write::write_all(&mut temp, text.as_bytes())?;
        if let Ok(old) = std::fs::metadata(path) {
            temp.as_file().set_permissions(old.permissions())?;
        }
        temp.persist(path).map(drop).map_err(|e| e.error)
    });
    outcome.map_err(fail)
}

/// Whether `[plugins.NAME]` exists.
pub(super) fn has_plugin(doc: &DocumentMut, name: &str) -> bool {
    doc.get("plugins")
        .and_then(Item::as_table_like)
        .is_some_and(|plugins| plugins.contains_key(name))
}

/// The capabilities `[plugins.NAME]` grants now (none when it lists none).
pub(super) fn granted(doc: &DocumentMut, name: &str) -> Vec<String> {
    doc.get("plugins")
        .and_then(Item::as_table_like)
        .and_then(|plugins| plugins.get(name))
        .and_then(Item::as_table_like)
        .and_then(|plugin| plugin.get("capabilities"))
        .and_then(Item::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Sets `[plugins.NAME]` to `dir` and `capabilities` (other keys of an existing entry, such
/// as `scope`, stay).
pub(super) fn set_plugin(
    doc: &mut DocumentMut,
    path: &Path,
    name: &str,
    dir: &str,
    capabilities: &[String],
) -> Result<(), CliError> {
    let plugins = doc
        .entry("plugins")
        .or_insert_with(|| {
            let mut table = Table::new();
            // `[plugins.NAME]` headers only, no empty `[plugins]`.
            table.set_implicit(true);
            Item::Table(table)
        })
        .as_table_mut()
        .ok_or_else(|| {
            CliError::Usage(format!(
                "{}: `plugins` is not a table; cannot add [plugins.{name}]",
                path.display()
            ))
        })?;
    let entry = plugins
        .entry(name)
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_mut()
        .ok_or_else(|| {
            CliError::Usage(format!("{}: plugins.{name} is not a table", path.display()))
        })?;
    entry["dir"] = value(dir);
    entry["capabilities"] = value(capabilities.iter().map(String::as_str).collect::<Array>());
    Ok(())
}

/// Removes `[plugins.NAME]`; whether it was there.
pub(super) fn remove_plugin(doc: &mut DocumentMut, name: &str) -> bool {
    doc.get_mut("plugins")
        .and_then(Item::as_table_like_mut)
        .is_some_and(|plugins| plugins.remove(name).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_survive_adding_and_removing_a_plugin() {
        let text =
            "# my tools\ntools_dirs = [\"tools-lua\"] # here\n\n[runtime]\n# speed\nvms = 2\n";
        let mut doc: DocumentMut = text.parse().unwrap();
        let path = Path::new("toolhost.toml");
        set_plugin(
            &mut doc,
            path,
            "weather",
            "packs/weather",
            &["json".into(), "proc".into()],
        )
        .unwrap();
        let added = doc.to_string();
        assert!(added.starts_with(text), "{added}");
        assert!(
            added.contains(
                "[plugins.weather]\ndir = \"packs/weather\"\ncapabilities = [\"json\", \"proc\"]"
            ),
            "{added}"
        );
        assert!(!added.contains("[plugins]\n"), "{added}");
        assert_eq!(granted(&doc, "weather"), ["json", "proc"]);
        assert!(remove_plugin(&mut doc, "weather"));
        assert!(!has_plugin(&doc, "weather"));
        assert!(doc.to_string().starts_with(text));
    }
}
