//! `toolhost list [--json]`.

use super::Cli;
use crate::Host;
use serde_json::{Value, json};
use std::process::ExitCode;

/// Prints the tools visible to `--scope`, sorted by name.
pub(super) fn run(host: &Host, cli: &Cli, as_json: bool) -> ExitCode {
    let tools = host.entries(cli.scope.as_deref());
    let rows: Vec<Value> = tools
        .iter()
        .map(|tool| {
            let reason = host.unavailable_reason(tool.name.as_str(), cli.scope.as_deref());
            json!({
                "name": tool.name.as_str(),
                "toolset": tool.toolset.as_str(),
                "emoji": tool.emoji,
                "available": reason.is_none(),
                "unavailable_reason": reason,
                "source": tool.source.to_string(),
                "file": tool.file.as_ref().map(|f| f.display().to_string()),
                "annotations": tool.annotations_json(),
                "annotations_derived": tool.effects.as_ref().is_some_and(|e| e.derived),
                "effects": tool.effects_json(),
            })
        })
        .collect();
    if as_json {
        outln!("{}", Value::Array(rows));
        return ExitCode::SUCCESS;
    }
    let header = ["NAME", "TOOLSET", "EMOJI", "AVAILABLE", "SOURCE"];
    let table: Vec<[String; 5]> = rows
        .iter()
        .map(|row| {
            let emoji = row["emoji"]
                .as_str()
                .filter(|e| !e.is_empty())
                .unwrap_or("⚡");
            let available = match row["unavailable_reason"].as_str() {
                None => "yes".to_string(),
                Some(reason) => format!("no ({reason})"),
            };
            [
                row["name"].as_str().unwrap_or_default().to_string(),
                row["toolset"].as_str().unwrap_or_default().to_string(),
                emoji.to_string(),
                available,
                row["source"].as_str().unwrap_or_default().to_string(),
            ]
        })
        .collect();
    print_table(&header, &table);
    // A server that is down and whose tools were never listed has no row above.
    for server in super::mcp_servers::rows(host) {
        if let Some(note) = server.note_without_tools() {
            outln!("{note}");
        }
    }
    ExitCode::SUCCESS
}

/// Prints left-aligned columns separated by two spaces, aligned by display width (an emoji
/// takes two terminal columns).
pub(super) fn print_table<const N: usize>(header: &[&str; N], rows: &[[String; N]]) {
    use unicode_width::UnicodeWidthStr;
    let mut widths = header.map(|h| h.width());
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.width());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(cell, width)| {
                format!("{cell}{}", " ".repeat(width.saturating_sub(cell.width())))
            })
            .collect();
        outln!("{}", padded.join("  ").trim_end());
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}

/// `1 file`, `2 files`.
pub(super) fn plural(n: usize, one: &str, many: &str) -> String {
    match n {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    }
}
