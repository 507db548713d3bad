//! Showing what a pack asks for and asking before granting it: a prompt on a terminal,
//! `--yes` for scripts; without either the command refuses (nothing is granted silently).

use super::super::error::CliError;
use super::shown::shown;
use crate::PackManifest;
use std::io::{BufRead, IsTerminal, Write};

/// What each grantable capability lets a pack's tools do, for the prompt.
const MEANINGS: &[(&str, &str)] = &[
    ("json", "encode and decode JSON"),
    ("log", "write log lines"),
    ("time", "read the clock"),
    (
        "env",
        "read environment variables ([sandbox] env, its tools' requires_env)",
    ),
    ("fs", "read and write files under [sandbox] fs_roots"),
    ("proc", "run the programs listed in [sandbox] commands"),
    ("store", "keep data in its own namespace of the store"),
    ("hooks", "see and change every tool call, not only its own"),
    ("call", "call any tool, not only its own"),
];

/// Capabilities every plugin has; a pack asking for nothing else needs no consent.
const HARMLESS: &[&str] = &["json", "log", "time"];

/// Prints what the pack `name` is and asks for (`granted`: the capabilities it would
/// have); returns once the user agreed, or `--yes` did. `already` are grants it has now
/// (an update asks only about new ones).
pub(super) fn ask(
    name: &str,
    manifest: &PackManifest,
    granted: &[String],
    already: &[String],
    yes: bool,
) -> Result<(), CliError> {
    outln!("pack {name} {}", shown(&manifest.version));
    if let Some(description) = &manifest.description {
        outln!("  {}", shown(description));
    }
    outln!("  capabilities:");
    for capability in granted {
        let meaning = MEANINGS
            .iter()
            .find(|(c, _)| c == capability)
            .map(|(_, m)| *m)
            .unwrap_or("");
        outln!("    {:<6} {meaning}", shown(capability));
    }
    if !manifest.requires_env.is_empty() {
        outln!(
            "  requires environment variables: {}",
            shown(&manifest.requires_env.join(", "))
        );
    }
    let new: Vec<&String> = granted
        .iter()
        .filter(|c| !HARMLESS.contains(&c.as_str()) && !already.contains(c))
        .collect();
    if new.is_empty() || yes {
        return Ok(());
    }
    let listed = shown(
        &new.iter()
            .map(|c| c.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    )
    .into_owned();
    if !std::io::stdin().is_terminal() {
        return Err(CliError::Usage(format!(
            "pack {name} asks for {listed}; not granted: run on a terminal to answer, or pass \
             --yes to grant them"
        )));
    }
    print!("Grant {listed} to pack {name}? [y/N] ");
    std::io::stdout().flush().ok();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(super::super::error::io("cannot read the answer"))?;
    match answer.trim() {
        "y" | "Y" | "yes" | "Yes" => Ok(()),
        _ => Err(CliError::Usage(format!(
            "pack {name}: {listed} not granted; nothing was changed"
        ))),
    }
}
