//! `toolhost store migrate|export|import`: the store's tables and data, for the operator
//! (ahead of a deploy; moving data between SQLite and PostgreSQL).

use super::Cli;
use super::error::{CliError, io};
use crate::Host;
use clap::Subcommand;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// What `toolhost store` does.
#[derive(Debug, Subcommand)]
pub(crate) enum StoreCommand {
    /// Create or upgrade the store's tables now (PostgreSQL; ahead of a deploy).
    Migrate,
    /// Write every row as JSON lines ({"ns","key","value"}) to FILE (default stdout).
    Export {
        /// The file to write (created or replaced).
        file: Option<PathBuf>,
    },
    /// Read JSON lines from FILE (default stdin) into the store: all rows or none.
    Import {
        /// The file to read.
        file: Option<PathBuf>,
    },
}

/// Runs `toolhost store …`.
pub(crate) fn run(cli: &Cli, command: &StoreCommand) -> Result<ExitCode, CliError> {
    let store = Host::configured_store(cli.config.as_deref(), &cli.tools_dir)?;
    // The store's errors name the file or the server themselves.
    let verb = match command {
        StoreCommand::Migrate => "migrate",
        StoreCommand::Export { .. } => "export",
        StoreCommand::Import { .. } => "import",
    };
    let failed = |message: String| CliError::Usage(format!("store {verb}: {message}"));
    match command {
        StoreCommand::Migrate => {
            store.migrate().map_err(failed)?;
            eprintln!("toolhost: store {} is up to date", store.location());
        }
        StoreCommand::Export { file } => {
            let count = match file {
                Some(path) => {
                    let file = std::fs::File::create(path)
                        .map_err(io(format!("cannot create {}", path.display())))?;
                    let mut out = std::io::BufWriter::new(file);
                    store.export(&mut out).map_err(failed)?
                }
                None => {
                    let stdout = std::io::stdout();
                    let mut out = std::io::BufWriter::new(stdout.lock());
                    let count = store.export(&mut out).map_err(failed)?;
                    out.flush().map_err(io("cannot write to stdout"))?;
                    count
                }
            };
            eprintln!("toolhost: exported {count} rows from {}", store.location());
        }
        StoreCommand::Import { file } => {
            let mut input: Box<dyn BufRead> = match file {
                Some(path) => Box::new(std::io::BufReader::new(
                    std::fs::File::open(path)
                        .map_err(io(format!("cannot open {}", path.display())))?,
                )),
                None => Box::new(std::io::stdin().lock()),
            };
            let count = store.import(&mut input).map_err(failed)?;
            eprintln!("toolhost: imported {count} rows into {}", store.location());
        }
    }
    Ok(ExitCode::SUCCESS)
}
