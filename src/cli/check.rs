//! `toolhost check [FILES]`: every problem is printed; exit 1 if there is any.

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
            None if !files.is_empty() && !verdict.registers => problems.push(format!(
                "{}: does not register: no top-level registry.register or registry.hook call",
                verdict.shown
            )),
            None => {}
        }
    }
    for problem in &problems {
        outln!("{problem}");
    }
    let files = plural(verdicts.len(), "file", "files");
    if problems.is_empty() {
        outln!("ok: {files} checked, {}", plural(tools, "tool", "tools"));
        ExitCode::SUCCESS
    } else {
        outln!(
            "{} in {files} checked",
            plural(problems.len(), "problem", "problems")
        );
        ExitCode::from(1)
    }
}

/// `1 file`, `2 files`.
fn plural(n: usize, one: &str, many: &str) -> String {
    match n {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    }
}
