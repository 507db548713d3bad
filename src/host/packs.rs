//! Packs at load (docs/packs.md): a plugin recorded in `toolhost.lock` loads only while its
//! folder matches the lock file for file; a plugin folder with a `pack.toml` loads only on
//! a toolhost at least as new as its `min_toolhost`, and its `requires_env` makes every
//! tool of it unavailable while a variable is unset. A refused pack loads no tool; every
//! other tool directory loads as usual.

use crate::config::LoadedConfig;
use crate::discovery::Refused;
use crate::error::{Error, Result};
use crate::pack::{LOCK_FILE, MANIFEST_FILE, PackLock, PackManifest};
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

/// Checks plugin `id`'s folder `dir` against the lock and its manifest.
pub(super) fn check(id: &str, dir: &Path, lock: &PackLock) -> PackCheck {
    let locked = lock.packs.get(id);
    let has_manifest = dir.join(MANIFEST_FILE).exists();
    if locked.is_none() && !has_manifest {
        return PackCheck::default();
    }
    let refuse = |why: String| PackCheck {
        refused: Some(Refused {
            file: dir.join(MANIFEST_FILE),
            reason: format!("pack '{id}' is refused: {why}; none of its tools are loaded"),
        }),
        requires_env: Vec::new(),
    };
    if let Some(locked) = locked {
        match locked.verify(dir) {
            Ok(changes) if changes.is_empty() => {}
            Ok(changes) => {
                let listed: Vec<String> = changes.iter().map(ToString::to_string).collect();
                return refuse(format!(
                    "its files do not match {LOCK_FILE} ({}; `toolhost pack verify` lists \
                     them, `toolhost pack update {id}` reinstalls it)",
                    listed.join(", ")
                ));
            }
            Err(e) => return refuse(e.to_string()),
        }
    }
    let manifest = match PackManifest::read(dir) {
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
