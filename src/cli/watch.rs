//! `toolhost watch`: reload on every change and print one line per reload.

use super::Cli;
use super::error::CliError;
use std::process::ExitCode;

/// Watches until interrupted; errors of each reload follow its line, indented.
pub(super) fn run(cli: &Cli) -> Result<ExitCode, CliError> {
    let host = super::build(cli, None, None)?;
    let mut watch = host.watch()?;
    let dirs: Vec<String> = host
        .tool_dirs()
        .iter()
        .filter(|d| !d.is_library())
        .map(|d| d.path.display().to_string())
        .collect();
    eprintln!("watching {} for changes (Ctrl-C to stop)", dirs.join(", "));
    while let Some(event) = watch.blocking_next() {
        outln!("{}", event.summary());
        for error in &event.errors {
            outln!("  {error}");
        }
        if let Some(failure) = &event.failed {
            outln!("  {failure}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
