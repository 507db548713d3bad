//! `toolhost schema [--toolsets a,b] [--disable c] [--format openai|responses|anthropic|mcp]
//! [--strict]`.

use super::Cli;
use crate::{Format, Host, Selection, ToolsetSelection};
use std::process::ExitCode;

/// Prints the definitions of the selected, available tools as one JSON array.
pub(super) fn run(
    host: &Host,
    cli: &Cli,
    toolsets: Option<&[String]>,
    disable: &[String],
    format: Format,
    strict: bool,
) -> ExitCode {
    let selection = Selection {
        toolsets: ToolsetSelection {
            enabled: toolsets.map(<[String]>::to_vec),
            disabled: disable.to_vec(),
        },
        scope: cli.scope.clone(),
        format,
        strict,
    };
    let definitions = host.tool_definitions(&selection);
    match serde_json::to_string(&*definitions) {
        Ok(text) => outln!("{text}"),
        Err(e) => {
            eprintln!("toolhost: cannot print definitions: {e}");
            return ExitCode::from(super::EXIT_SETUP);
        }
    }
    ExitCode::SUCCESS
}
