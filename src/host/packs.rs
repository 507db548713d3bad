//! Packs at load (docs/packs.md): a plugin recorded in `toolhost.lock` loads only while its
//! folder matches the lock file for file; a plugin folder with a `pack.toml` loads only on
//! a toolhost at least as new as its `min_toolhost`, and its `requires_env` makes every
//! tool of it unavailable while a variable is unset. A refused pack loads no tool; every
//! other tool directory loads as usual.

use crate::config::LoadedConfig;
use crate::discovery::Refused;
use crate::error::{Error, Result};
use crate::pack::{LOCK_FILE, LockedPack, MANIFEST_FILE, PACKS_DIR, PackLock, PackManifest};
use std::path::{Path, PathBuf};

/// What loading a plugin folder as a pack decided.
#[derive(Debug, Default)]
pub(super) struct PackCheck {
    /// Why none of its tools load (reported for its `pack.toml`).
    pub refused: Option<Refused>,
    /// The manifest's `requires_env`, added to each of its tools'.
    pub requires_env: Vec<String>,
}

/// `toolhost.lock` beside the configuration file (none without a configuration file).
pub(super) fn read_lock(loaded: &LoadedConfig) -> Result<PackLock> {
    let Some(config) = &loaded.path else {
        return Ok(PackLock::default());
    };
    let path = lock_path(config);
    PackLock::read(&path).map_err(|e| Error::ConfigInvalid {
        path: e.path,
        message: e.message,
    })
}

/// The lock file that goes with the configuration file `config`.
fn lock_path(config: &Path) -> PathBuf {
    config.parent().unwrap_or(Path::new("")).join(LOCK_FILE)
}

/// The locked packs as the checks compare them: each pack's folder (`packs/NAME` beside the
/// configuration file) and its canonical path, found once for every tool directory of a
/// load (a link or `..` then does not escape a comparison). A pack whose folder is missing
/// has none: nothing lies in it.
pub(super) struct LockedPacks<'a> {
    lock: &'a PackLock,
    /// Name, lock entry, folder and the folder's canonical path.
    folders: Vec<(&'a str, &'a LockedPack, PathBuf, PathBuf)>,
}

impl<'a> LockedPacks<'a> {
    /// The packs of `lock`, beside the configuration file `config`. Nothing is read when
    /// no pack is locked or there is no configuration file.
    pub(super) fn new(lock: &'a PackLock, config: Option<&Path>) -> Self {
        let folders = match config {
            Some(config) if !lock.packs.is_empty() => {
                let packs = config.parent().unwrap_or(Path::new("")).join(PACKS_DIR);
                lock.packs
                    .iter()
                    .filter_map(|(name, locked)| {
                        let folder = packs.join(name);
                        let real = folder.canonicalize().ok()?;
                        Some((name.as_str(), locked, folder, real))
                    })
                    .collect()
            }
            _ => Vec::new(),
        };
        Self { lock, folders }
    }

    /// The pack whose canonical folder holds the canonical path `real`, with its folder.
    fn holding(&self, real: &Path) -> Option<(&'a str, &'a LockedPack, PathBuf)> {
        self.folders
            .iter()
            .find(|(_, _, _, pack)| real.starts_with(pack))
            .map(|(name, locked, folder, _)| (*name, *locked, folder.clone()))
    }
}

/// The lock entry plugin `id`'s folder `dir` answers to, with the pack folder it covers:
/// the locked pack whose folder `dir` is or lies in ([`locked_at`]), whatever the plugin's
/// id; otherwise the entry named `id` and `dir`. Renaming `[plugins.NAME]` therefore does
/// not skip the check.
fn locked_for<'a>(
    id: &str,
    dir: &Path,
    packs: &LockedPacks<'a>,
) -> Option<(&'a str, &'a LockedPack, PathBuf)> {
    locked_at(dir, packs).or_else(|| {
        packs
            .lock
            .packs
            .get_key_value(id)
            .map(|(name, locked)| (name.as_str(), locked, dir.to_path_buf()))
    })
}

/// The locked pack whose folder is `dir` or holds it (compared canonically), with that
/// folder.
fn locked_at<'a>(
    dir: &Path,
    packs: &LockedPacks<'a>,
) -> Option<(&'a str, &'a LockedPack, PathBuf)> {
    if packs.folders.is_empty() {
        return None;
    }
    packs.holding(&dir.canonicalize().ok()?)
}

/// The locked pack that an entry of the tool directory `dir` within discovery's reach (an
/// entry of `dir`, or a file in a folder of it) is, or lies in, with the pack's folder.
/// Compared canonically: a link to a pack's folder or to one of its files counts.
/// Discovery would find such an entry (a pack's `tool.lua` in `packs/` itself, a linked
/// file or package file) and load it past the lock's check. Nothing is read when no pack
/// is locked.
fn locked_inside<'a>(dir: &Path, packs: &LockedPacks<'a>) -> Option<(&'a str, PathBuf)> {
    if packs.folders.is_empty() {
        return None;
    }
    let in_pack = |real: &Path| packs.holding(real).map(|(name, _, folder)| (name, folder));
    for (real, is_dir) in entries_of(&dir.canonicalize().ok()?) {
        if let Some(found) = in_pack(&real) {
            return Some(found);
        }
        // One level down discovery reads files only (a package's `tool.lua`, a module),
        // so a folder holding the packs folder (the project's root) is not refused.
        if is_dir
            && let Some(found) = entries_of(&real)
                .filter(|(_, inner_is_dir)| !inner_is_dir)
                .find_map(|(inner, _)| in_pack(&inner))
        {
            return Some(found);
        }
    }
    None
}

/// The entries of the folder `real` (a canonical path), each as its canonical path and
/// whether it is a folder (following links). Only a link needs resolving: anything else is
/// where the listing shows it.
fn entries_of(real: &Path) -> impl Iterator<Item = (PathBuf, bool)> + '_ {
    std::fs::read_dir(real)
        .into_iter()
        .flatten()
        .filter_map(std::result::Result::ok)
        .filter_map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_symlink() => {
                let target = entry.path().canonicalize().ok()?;
                let is_dir = target.is_dir();
                Some((target, is_dir))
            }
            Ok(kind) => Some((real.join(entry.file_name()), kind.is_dir())),
            Err(_) => None,
        })
}

/// Why the tool directory `dir` (built-in, or plugin `id`'s) loads nothing: it holds a
/// locked pack's folder or a link into one (see [`locked_inside`]), whose files it would
/// load past the lock's check and the pack's own grants. A pack loads as its own plugin
/// (`pack add` configures it so).
fn holder_refusal(dir: &Path, plugin: Option<&str>, packs: &LockedPacks<'_>) -> Option<Refused> {
    let (name, folder) = locked_inside(dir, packs)?;
    let what = match plugin {
        Some(id) => format!("plugin '{id}' is refused"),
        None => "the tool directory is refused".to_string(),
    };
    Some(Refused {
        file: folder.join(MANIFEST_FILE),
        reason: format!(
            "{what}: its folder {} holds the locked pack '{name}', which loads only as its \
             own plugin ([plugins.{name}], checked against {LOCK_FILE}); none of the \
             folder's tools are loaded",
            dir.display()
        ),
    })
}

/// Checks plugin `id`'s folder `dir` against the lock (see [`locked_for`]) and its
/// manifest; a folder holding a locked pack is refused ([`holder_refusal`]).
pub(super) fn check(id: &str, dir: &Path, packs: &LockedPacks<'_>) -> PackCheck {
    check_dir(Some(id), dir, packs)
}

/// Checks a built-in tool directory: one that is (or lies in) a locked pack's folder is
/// checked against the lock and the pack's manifest as the pack's own plugin would be
/// (pointing `--tools-dir` at an installed pack does not skip the check); one that holds a
/// locked pack is refused ([`holder_refusal`]). Any other, with or without a `pack.toml`,
/// loads as before.
pub(super) fn check_builtin(dir: &Path, packs: &LockedPacks<'_>) -> PackCheck {
    check_dir(None, dir, packs)
}

/// [`check`] for plugin `plugin`'s folder, or [`check_builtin`] without one.
fn check_dir(plugin: Option<&str>, dir: &Path, packs: &LockedPacks<'_>) -> PackCheck {
    let locked = match plugin {
        Some(id) => locked_for(id, dir, packs),
        None => locked_at(dir, packs),
    };
    if locked.is_none()
        && let Some(refused) = holder_refusal(dir, plugin, packs)
    {
        return PackCheck {
            refused: Some(refused),
            requires_env: Vec::new(),
        };
    }
    // A built-in directory is a pack only as a locked pack's folder.
    let has_manifest = plugin.is_some() && dir.join(MANIFEST_FILE).exists();
    if locked.is_none() && !has_manifest {
        return PackCheck::default();
    }
    let id = plugin
        .or(locked.as_ref().map(|(name, _, _)| *name))
        .unwrap_or_default();
    let refuse = |why: String| PackCheck {
        refused: Some(Refused {
            file: dir.join(MANIFEST_FILE),
            reason: format!("pack '{id}' is refused: {why}; none of its tools are loaded"),
        }),
        requires_env: Vec::new(),
    };
    // A plugin folder inside a locked pack reads that pack's manifest.
    let manifest_dir = locked
        .as_ref()
        .map_or(dir, |(_, _, folder)| folder.as_path());
    if let Some((name, locked, folder)) = &locked {
        match locked.verify(folder) {
            Ok(changes) if changes.is_empty() => {}
            Ok(changes) => {
                let listed: Vec<String> = changes.iter().map(ToString::to_string).collect();
                return refuse(format!(
                    "its files do not match {LOCK_FILE} ({}; `toolhost pack verify` lists \
                     them, `toolhost pack update {name}` reinstalls it)",
                    listed.join(", ")
                ));
            }
            Err(e) => return refuse(e.to_string()),
        }
    }
    let manifest = match PackManifest::read(manifest_dir) {
        Ok(manifest) => manifest,
        Err(e) => return refuse(e.to_string()),
    };
    if let Err(why) = manifest.check_toolhost(env!("CARGO_PKG_VERSION")) {
        return refuse(why);
    }
    PackCheck {
        refused: None,
        requires_env: manifest.requires_env,
    }
}
