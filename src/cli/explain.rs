//! `toolhost explain TOOL`: a tool's effects (docs/effects.md), each with the `file:line`
//! it comes from, and the annotations it is served with.

use super::Cli;
use crate::Host;
use std::process::ExitCode;

/// Prints what `name` can do to the world; exit 1 when there is no such tool.
pub(super) fn run(host: &Host, cli: &Cli, name: &str) -> ExitCode {
    let tools = host.entries(cli.scope.as_deref());
    let Some(tool) = tools.iter().find(|tool| tool.name.as_str() == name) else {
        let known: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
        let hint = Host::closest_name(name, &known)
            .map(|close| format!(" (did you mean {close}?)"))
            .unwrap_or_default();
        eprintln!("toolhost explain: no tool named {name} in this scope{hint}");
        return ExitCode::FAILURE;
    };
    outln!("{} ({})", tool.name.as_str(), tool.origin());
    let hints = tool.annotations_json();
    let derived = tool.effects.as_ref().is_some_and(|effects| effects.derived);
    let mut said: Vec<String> = Vec::new();
    if let Some(hints) = hints.as_object() {
        for (key, value) in hints {
            said.push(format!("{key} = {value}"));
        }
    }
    let how = if derived {
        " (filled in from the effects)"
    } else {
        ""
    };
    match said.is_empty() {
        true => outln!("annotations: none"),
        false => outln!("annotations: {}{how}", said.join(", ")),
    }
    let Some(effects) = &tool.effects else {
        outln!(
            "effects: not analysed ({} tools are not Lua files)",
            tool.source
        );
        return ExitCode::SUCCESS;
    };
    if effects.sites.is_empty() {
        outln!("effects: none (it touches nothing outside the VM)");
        return ExitCode::SUCCESS;
    }
    outln!("effects:");
    let rows: Vec<[String; 3]> = effects
        .sites
        .iter()
        .map(|site| {
            [
                site.effect.to_string(),
                site.call.to_string(),
                format!("{}:{}", site.file, site.line),
            ]
        })
        .collect();
    super::list::print_table(&["EFFECT", "CALL", "AT"], &rows);
    ExitCode::SUCCESS
}
