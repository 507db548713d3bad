//! `pack add` and `pack update`: fetch, check (manifest, files), ask, then move the files
//! into `packs/NAME/` and write `[plugins.NAME]` and the lock entry. Nothing is written
//! before the pack has passed every check and the user agreed.

use super::super::error::{CliError, io};
use super::git::{self, Fetched};
use super::shown::shown;
use super::{Project, check_name, config_edit, consent};
use crate::{LockedPack, PackLock, PackManifest};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

/// `pack add URL[#REV] [--name N] [--yes]`.
pub(super) fn add(
    project: &Project,
    spec: &str,
    name: Option<&str>,
    yes: bool,
) -> Result<ExitCode, CliError> {
    let (source, rev) = git::split_rev(spec);
    if let Some(name) = name {
        check_name(name, "--name")?;
    }
    let created = !project.packs.exists();
    std::fs::create_dir_all(&project.packs)
        .map_err(io(format!("cannot create {}", project.packs.display())))?;
    let outcome = install_new(project, source, rev, name, yes);
    if outcome.is_err() && created {
        // A refused first pack leaves no empty `packs/` behind (removes only an empty one).
        std::fs::remove_dir(&project.packs).ok();
    }
    outcome
}

/// `pack add` once `packs/` exists.
fn install_new(
    project: &Project,
    source: &str,
    rev: Option<&str>,
    name: Option<&str>,
    yes: bool,
) -> Result<ExitCode, CliError> {
    let mut lock = PackLock::read(&project.lock)?;
    let mut doc = config_edit::read(&project.config)?;
    let fetch_from = fetch_source(source);
    // The lock is committed: no credentials in it (git still gets the URL as given).
    let recorded = git::without_userinfo(&fetch_from);
    let fetched = git::fetch(&fetch_from, rev, &project.packs)?;
    let manifest = manifest_of(&fetched, &recorded)?;
    let name = name.unwrap_or(&manifest.name).to_string();
    if lock.packs.contains_key(&name) {
        return Err(CliError::Usage(format!(
            "pack {name} is already installed (`toolhost pack update {name}` fetches a newer \
             version; --name installs it under another name)"
        )));
    }
    if config_edit::has_plugin(&doc, &name) {
        return Err(CliError::Usage(format!(
            "{} already has [plugins.{name}]; pick another name with --name",
            project.config.display()
        )));
    }
    let dir = project.dir_of(&name);
    if dir.symlink_metadata().is_ok() {
        return Err(CliError::Exists(dir));
    }
    let files = files_of(&fetched, &recorded)?;
    let granted = manifest.granted_capabilities();
    consent::ask(&name, &manifest, &granted, &[], yes)?;
    std::fs::rename(&fetched.tree, &dir)
        .map_err(io(format!("cannot move the pack into {}", dir.display())))?;
    config_edit::set_plugin(
        &mut doc,
        &project.config,
        &name,
        &format!("{}/{name}", crate::PACKS_DIR),
        &granted,
    )?;
    config_edit::write(&project.config, &doc)?;
    let count = files.len();
    lock.packs.insert(
        name.clone(),
        LockedPack {
            source: recorded,
            reference: rev.map(str::to_string),
            commit: fetched.commit.clone(),
            files,
        },
    );
    lock.write(&project.lock)?;
    outln!(
        "added pack {name} {} at {} ({count} files) in {}",
        shown(&manifest.version),
        short(fetched.commit.as_deref()),
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `pack update [NAME[#REV]] [--yes]`.
pub(super) fn update(
    project: &Project,
    spec: Option<&str>,
    yes: bool,
) -> Result<ExitCode, CliError> {
    let mut lock = PackLock::read(&project.lock)?;
    let targets: Vec<(String, Option<String>)> = match spec {
        Some(spec) => {
            let (name, rev) = git::split_rev(spec);
            check_name(name, "NAME")?;
            if !lock.packs.contains_key(name) {
                return Err(not_installed(project, name));
            }
            vec![(name.to_string(), rev.map(str::to_string))]
        }
        None => lock.packs.keys().map(|name| (name.clone(), None)).collect(),
    };
    if targets.is_empty() {
        outln!("no packs installed");
        return Ok(ExitCode::SUCCESS);
    }
    let mut doc = config_edit::read(&project.config)?;
    for (name, rev) in targets {
        let Some(locked) = lock.packs.get(&name).cloned() else {
            continue;
        };
        let reference = rev.or_else(|| locked.reference.clone());
        let fetched = git::fetch(&locked.source, reference.as_deref(), &project.packs)?;
        let dir = project.dir_of(&name);
        let files = files_of(&fetched, &locked.source)?;
        let intact = locked.verify(&dir).is_ok_and(|changes| changes.is_empty());
        if fetched.commit == locked.commit
            && files == locked.files
            && intact
            && reference == locked.reference
        {
            outln!(
                "{name}: up to date at {}",
                shown(short(locked.commit.as_deref()))
            );
            continue;
        }
        let manifest = manifest_of(&fetched, &locked.source)?;
        let granted = manifest.granted_capabilities();
        let already = config_edit::granted(&doc, &name);
        consent::ask(&name, &manifest, &granted, &already, yes)?;
        replace_dir(&fetched, &dir, &project.packs)?;
        config_edit::set_plugin(
            &mut doc,
            &project.config,
            &name,
            &format!("{}/{name}", crate::PACKS_DIR),
            &granted,
        )?;
        config_edit::write(&project.config, &doc)?;
        lock.packs.insert(
            name.clone(),
            LockedPack {
                source: locked.source.clone(),
                reference,
                commit: fetched.commit.clone(),
                files,
            },
        );
        lock.write(&project.lock)?;
        outln!(
            "updated pack {name} to {} at {} (was {})",
            shown(&manifest.version),
            short(fetched.commit.as_deref()),
            shown(short(locked.commit.as_deref()))
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The error for a name the lock does not have.
pub(super) fn not_installed(project: &Project, name: &str) -> CliError {
    CliError::Usage(format!(
        "no pack named {name} in {}",
        project.lock.display()
    ))
}

/// A local path made absolute, so the recorded one works from any directory for `pack
/// update`; a URL as given.
fn fetch_source(source: &str) -> String {
    let path = Path::new(source);
    if !source.contains("://")
        && !source.starts_with('-')
        && path.exists()
        && let Ok(absolute) = path.canonicalize()
    {
        return absolute.display().to_string();
    }
    source.to_string()
}

/// The fetched pack's manifest; errors name the file inside the source, not the temporary
/// folder.
fn manifest_of(fetched: &Fetched, source: &str) -> Result<PackManifest, CliError> {
    PackManifest::read(&fetched.tree).map_err(|e| inside(fetched, source, e))
}

/// The fetched pack's files and digests (no links, within the size limits).
fn files_of(fetched: &Fetched, source: &str) -> Result<BTreeMap<String, String>, CliError> {
    crate::hash_tree(&fetched.tree).map_err(|e| inside(fetched, source, e))
}

/// `SOURCE: FILE: problem` for a problem with a fetched file.
fn inside(fetched: &Fetched, source: &str, error: crate::PackError) -> CliError {
    let file = error
        .path
        .strip_prefix(&fetched.tree)
        .unwrap_or(&error.path)
        .display()
        .to_string();
    CliError::Usage(format!("{source}: {file}: {}", error.message))
}

/// Puts the fetched files in place of `dir` (the old ones are removed afterwards).
fn replace_dir(fetched: &Fetched, dir: &Path, packs: &Path) -> Result<(), CliError> {
    let old = tempfile::Builder::new()
        .prefix(".old-")
        .tempdir_in(packs)
        .map_err(io(format!(
            "cannot make a temporary folder in {}",
            packs.display()
        )))?;
    if dir.symlink_metadata().is_ok() {
        std::fs::rename(dir, old.path().join("old"))
            .map_err(io(format!("cannot move {} aside", dir.display())))?;
    }
    std::fs::rename(&fetched.tree, dir)
        .map_err(io(format!("cannot move the pack into {}", dir.display())))
}

/// The first 12 characters of a commit id (`folder` for a pack copied from a folder).
pub(super) fn short(commit: Option<&str>) -> &str {
    match commit {
        Some(commit) => commit.get(..12).unwrap_or(commit),
        None => "folder",
    }
}
