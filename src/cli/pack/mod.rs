//! `toolhost pack add|update|remove|list|verify` (docs/packs.md): tool packs fetched with
//! git into `packs/NAME/` beside the configuration file, granted their capabilities in
//! `[plugins.NAME]` and pinned in `toolhost.lock`.

mod config_edit;
mod consent;
mod git;
mod install;
mod manage;
mod shown;

use super::Cli;
use super::error::CliError;
use clap::Subcommand;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The `pack` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum PackCommand {
    /// Fetch a pack from git (URL or path, optionally #TAG, #BRANCH or #COMMIT) into
    /// packs/NAME, grant its capabilities and record it in toolhost.lock.
    Add {
        /// The git URL or path, with an optional #REV.
        #[arg(value_name = "URL[#REV]")]
        source: String,
        /// Install under this name instead of the manifest's.
        #[arg(long, value_name = "N")]
        name: Option<String>,
        /// Grant the capabilities it asks for without asking.
        #[arg(long)]
        yes: bool,
    },
    /// Fetch the newest commit of each pack's recorded revision (or NAME#REV) and reinstall.
    Update {
        /// The pack to update, optionally with a new #REV (default: every pack).
        #[arg(value_name = "NAME[#REV]")]
        name: Option<String>,
        /// Grant capabilities the new version asks for without asking.
        #[arg(long)]
        yes: bool,
    },
    /// Remove a pack: its folder, its [plugins.NAME] entry and its lock entry.
    Remove {
        /// The pack's name.
        name: String,
    },
    /// List the installed packs.
    List,
    /// Check every pack's files against toolhost.lock; exit 1 naming each changed, added
    /// or removed file.
    Verify,
}

/// Where a project's packs live: the configuration file, the lock beside it and `packs/`.
pub(super) struct Project {
    /// The configuration file (created by `pack add` when missing).
    pub config: PathBuf,
    /// `toolhost.lock`.
    pub lock: PathBuf,
    /// `packs/`.
    pub packs: PathBuf,
}

impl Project {
    /// The project of `--config`, else `$TOOLHOST_CONFIG`, else `./toolhost.toml`.
    fn of(cli: &Cli) -> Self {
        let config = cli
            .config
            .clone()
            .or_else(|| {
                std::env::var_os("TOOLHOST_CONFIG")
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from)
            })
            .unwrap_or_else(|| PathBuf::from("toolhost.toml"));
        let base = config.parent().unwrap_or(Path::new("")).to_path_buf();
        Self {
            lock: base.join(crate::LOCK_FILE),
            packs: base.join(crate::PACKS_DIR),
            config,
        }
    }

    /// `packs/NAME`.
    fn dir_of(&self, name: &str) -> PathBuf {
        self.packs.join(name)
    }
}

/// Runs one `pack` subcommand.
pub(super) fn run(cli: &Cli, command: &PackCommand) -> Result<ExitCode, CliError> {
    let project = Project::of(cli);
    match command {
        PackCommand::Add { source, name, yes } => {
            install::add(&project, source, name.as_deref(), *yes)
        }
        PackCommand::Update { name, yes } => install::update(&project, name.as_deref(), *yes),
        PackCommand::Remove { name } => manage::remove(&project, name),
        PackCommand::List => manage::list(&project),
        PackCommand::Verify => manage::verify(&project),
    }
}

/// Checks a pack name given on the command line (it becomes a folder name: no `..`, no `/`).
fn check_name(name: &str, what: &str) -> Result<(), CliError> {
    crate::Host::check_tool_name(name)
        .map_err(|e| CliError::Usage(format!("{what}: the pack name {e}")))
}
