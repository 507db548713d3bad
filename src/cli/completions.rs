//! `toolhost completions SHELL` and `toolhost man`: generated from the same clap definition
//! that parses the command line and prints `--help`, so they cannot drift from it.

use super::Cli;
use super::error::{CliError, io};
use clap::CommandFactory;
use std::process::ExitCode;

/// Prints the completion script for `shell`.
pub(super) fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "toolhost", &mut script);
    print_text(&script);
    ExitCode::SUCCESS
}

/// Prints the man page (roff): the command, its global flags and its subcommands.
pub(super) fn man() -> Result<ExitCode, CliError> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut page)
        .map_err(io("cannot render the man page"))?;
    print_text(&page);
    Ok(ExitCode::SUCCESS)
}

/// Prints generated text (a closed stdout ends the process quietly, as for every command).
fn print_text(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    outln!("{}", text.trim_end_matches('\n'));
}
