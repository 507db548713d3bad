//! `toolhost check [FILES]`: every problem is printed; exit 1 if there is any.

use super::list::plural;
use crate::Host;
use std::path::PathBuf;
use std::process::ExitCode;

/// Reports parse, load and registration problems. An explicitly named file that does not
/// register is a problem too (it would never be loaded).
pub(super) fn run(host: &Host, files: &[PathBuf]) -> ExitCode {
    let verdicts = host.discovery();
    let mut problems = Vec::new();
    let mut tools = 0usize;
    for verdict in &verdicts {
        tools += verdict.tools.len();
        match &verdict.error {
            Some(error) => problems.push(error.to_string()),
            None if verdict.registers => {}
            None => {
                // A file that means to register but does not would silently not exist.
                let meant = std::fs::read_to_string(&verdict.path)
                    .ok()
                    .and_then(|text| near_miss(&text));
                match (meant, files.is_empty()) {
                    (Some((line, why)), _) => {
                        problems.push(format!("{}:{line}: does not register: {why}", verdict.shown))
                    }
                    (None, false) => problems.push(format!(
                        "{}: does not register: no top-level registry.register or registry.hook call",
                        verdict.shown
                    )),
                    (None, true) => {}
                }
            }
        }
    }
    for problem in &problems {
        outln!("{problem}");
    }
    let files = plural(verdicts.len(), "file", "files");
    let (resources, prompts) = super::content::Content::of_host(host).counts();
    let mut registered = plural(tools, "tool", "tools");
    if resources + prompts > 0 {
        registered = format!(
            "{registered}, {}, {}",
            plural(resources, "resource", "resources"),
            plural(prompts, "prompt", "prompts")
        );
    }
    if problems.is_empty() {
        outln!("ok: {files} checked, {registered}");
        ExitCode::SUCCESS
    } else {
        outln!(
            "{} in {files} checked",
            plural(problems.len(), "problem", "problems")
        );
        ExitCode::from(1)
    }
}

/// Where and why a file that never registers looks as if it meant to: a method call
/// (`registry:register`), a misspelt name (`registry.regsiter`), or a registration that is
/// not at the top level.
fn near_miss(text: &str) -> Option<(usize, String)> {
    const RULE: &str = "toolhost runs a file only if `registry.register{...}` (or \
                        `registry.hook`) is called at its top level, directly or in a top-level \
                        `for`/`do` block";
    let pattern = regex::Regex::new(r"registry\s*([.:])\s*([A-Za-z_][A-Za-z0-9_]*)").ok()?;
    let mut nested = None;
    for found in pattern.captures_iter(text) {
        let line = text[..found.get(0)?.start()].matches('\n').count() + 1;
        let (separator, name) = (&found[1], &found[2]);
        let known = ["register", "hook", "resource", "prompt"];
        if separator == ":" && known.contains(&name) {
            return Some((
                line,
                format!("`registry:{name}` is a method call; write `registry.{name}` ({RULE})"),
            ));
        }
        if !known.contains(&name) {
            if let Some(near) = crate::Host::closest_name(name, &known) {
                return Some((
                    line,
                    format!("`registry.{name}` — did you mean `registry.{near}`? ({RULE})"),
                ));
            }
            continue;
        }
        nested.get_or_insert(line);
    }
    nested.map(|line| {
        (
            line,
            format!(
                "`registry.register` is not called at the top level (inside a function, `if` \
                 or loop body other than `for`/`do`); {RULE}"
            ),
        )
    })
}
