//! `pack remove`, `pack list` and `pack verify`: the installed packs as the lock records
//! them.

use super::super::error::{CliError, io};
use super::install::{not_installed, short};
use super::shown::shown;
use super::{Project, check_name, config_edit};
use crate::{PackLock, PackManifest};
use std::process::ExitCode;

/// `pack remove NAME`: the folder, `[plugins.NAME]` and the lock entry.
pub(super) fn remove(project: &Project, name: &str) -> Result<ExitCode, CliError> {
    check_name(name, "NAME")?;
    let mut lock = PackLock::read(&project.lock)?;
    if lock.packs.remove(name).is_none() {
        return Err(not_installed(project, name));
    }
    let dir = project.dir_of(name);
    match dir.symlink_metadata() {
        // A link is removed, never what it points to.
        Ok(meta) if meta.file_type().is_symlink() => std::fs::remove_file(&dir),
        Ok(_) => std::fs::remove_dir_all(&dir),
        Err(_) => Ok(()),
    }
    .map_err(io(format!("cannot remove {}", dir.display())))?;
    let mut doc = config_edit::read(&project.config)?;
    if config_edit::remove_plugin(&mut doc, name) {
        config_edit::write(&project.config, &doc)?;
    }
    lock.write(&project.lock)?;
    outln!("removed pack {name}");
    Ok(ExitCode::SUCCESS)
}

/// `pack list`: name, version, commit and source of each installed pack.
pub(super) fn list(project: &Project) -> Result<ExitCode, CliError> {
    let lock = PackLock::read(&project.lock)?;
    let rows: Vec<[String; 5]> = lock
        .packs
        .iter()
        .map(|(name, locked)| {
            let version = PackManifest::read(&project.dir_of(name))
                .map(|m| shown(&m.version).into_owned())
                .unwrap_or_else(|_| "?".to_string());
            [
                name.clone(),
                version,
                locked
                    .reference
                    .as_deref()
                    .map_or_else(|| "-".to_string(), |r| shown(r).into_owned()),
                shown(short(locked.commit.as_deref())).into_owned(),
                shown(&locked.source).into_owned(),
            ]
        })
        .collect();
    super::super::list::print_table(&["NAME", "VERSION", "REF", "COMMIT", "SOURCE"], &rows);
    Ok(ExitCode::SUCCESS)
}

/// `pack verify`: every pack's files against the lock; exit 1 naming each difference.
pub(super) fn verify(project: &Project) -> Result<ExitCode, CliError> {
    let lock = PackLock::read(&project.lock)?;
    let mut failed = false;
    for (name, locked) in &lock.packs {
        let dir = project.dir_of(name);
        match locked.verify(&dir) {
            Ok(changes) if changes.is_empty() => {
                outln!("{name}: ok ({} files)", locked.files.len());
            }
            Ok(changes) => {
                failed = true;
                for change in changes {
                    outln!("{name}: {}/{}", dir.display(), shown(&change.to_string()));
                }
            }
            Err(e) => {
                failed = true;
                outln!("{name}: {}", shown(&e.to_string()));
            }
        }
    }
    Ok(match failed {
        true => ExitCode::from(1),
        false => ExitCode::SUCCESS,
    })
}
