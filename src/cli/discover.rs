//! `toolhost discover [--json]`.

use super::content::Content;
use crate::{Host, Verdict};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;

/// The JSON object of docs/cli.md for one verdict, with the resources (URIs) and prompts
/// (names) its file registered.
pub(super) fn verdict_json(verdict: &Verdict, content: &Content) -> Value {
    let (resources, prompts) = content.of(verdict);
    json!({
        "path": verdict.path.display().to_string(),
        "registers": verdict.registers,
        "reason": verdict.reason,
        "cached": verdict.cached,
        "error": verdict.error.as_ref().map(ToString::to_string),
        "tools": verdict.tools,
        "resources": resources,
        "prompts": prompts,
    })
}

/// Prints every candidate's verdict, sorted by path. Load errors do not change the exit
/// code.
pub(super) fn run(host: &Host, as_json: bool) -> ExitCode {
    let verdicts = host.discovery();
    let servers = super::mcp_servers::rows(host);
    let content = Content::of_host(host);
    if as_json {
        // Each file's tools' effects, by tool name.
        let mut effects: HashMap<PathBuf, Map<String, Value>> = HashMap::new();
        for tool in host.entries(None) {
            if let Some(file) = &tool.file {
                let of_file = effects.entry(file.clone()).or_default();
                of_file.insert(tool.name.to_string(), tool.effects_json());
            }
        }
        let mut rows: Vec<Value> = verdicts
            .iter()
            .map(|verdict| {
                let mut row = verdict_json(verdict, &content);
                let tools = effects.remove(&verdict.path).unwrap_or_default();
                if let Some(object) = row.as_object_mut() {
                    object.insert("effects".into(), Value::Object(tools));
                }
                row
            })
            .collect();
        rows.extend(servers.iter().map(super::mcp_servers::Row::to_json));
        outln!("{}", Value::Array(rows));
        return ExitCode::SUCCESS;
    }
    let mut rows: Vec<[String; 4]> = verdicts
        .iter()
        .map(|v| {
            let reason = serde_json::to_value(v.reason)
                .ok()
                .and_then(|r| r.as_str().map(str::to_string))
                .unwrap_or_default();
            let (resources, prompts) = content.of(v);
            let detail = match &v.error {
                Some(error) => format!("error: {error}"),
                None => v
                    .tools
                    .iter()
                    .map(String::as_str)
                    .chain(resources.iter().copied())
                    .chain(prompts.iter().copied())
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            [
                v.path.display().to_string(),
                reason,
                if v.cached { "cached" } else { "" }.to_string(),
                detail,
            ]
        })
        .collect();
    rows.extend(servers.iter().map(super::mcp_servers::Row::to_cells));
    super::list::print_table(
        &[
            "PATH",
            "REASON",
            "CACHE",
            "TOOLS, RESOURCES, PROMPTS / ERROR",
        ],
        &rows,
    );
    let (resources, prompts) = content.counts();
    if resources + prompts > 0 {
        outln!(
            "{}, {}",
            super::list::plural(resources, "resource", "resources"),
            super::list::plural(prompts, "prompt", "prompts")
        );
    }
    for problem in host.mcp_problems() {
        outln!("{problem}");
    }
    ExitCode::SUCCESS
}
