//! `toolhost call NAME [ARGS|-] [--answers FILE]`.

use super::Cli;
use super::error::{CliError, io};
use crate::{CallContext, ScriptedAsker};
use serde_json::Value;
use std::io::Read;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

/// Calls the tool and prints the result: text raw, objects as compact JSON. Exit 1 when
/// the result is an error object. `answers` is the file answering the call's input
/// requests (without it `ctx.ask` answers `cancel`).
pub(super) fn run(
    cli: &Cli,
    name: &str,
    args: Option<&str>,
    answers: Option<&Path>,
) -> Result<ExitCode, CliError> {
    let text = match args {
        None => "{}".to_string(),
        Some("-") => {
            let mut buffer = String::new();
            std::io::stdin()
                .read_to_string(&mut buffer)
                .map_err(io("cannot read arguments from stdin"))?;
            buffer
        }
        Some(text) => text.to_string(),
    };
    let args: Value = if text.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        serde_json::from_str(&text).map_err(CliError::Args)?
    };
    let asker = answers.map(read_answers).transpose()?;
    let host = super::build(cli, None, super::ONE_SHOT_VMS)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(io("cannot start the async runtime"))?;
    let mut ctx = CallContext {
        scope: cli.scope.clone(),
        ..CallContext::default()
    };
    if let Some(asker) = asker {
        ctx = ctx.with_asker(Arc::new(asker));
    }
    let result = runtime.block_on(host.handle_function_call(name, args, &ctx));
    outln!("{result}");
    drop(runtime);
    super::leave_for_exit(host);
    Ok(if result.is_error() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The answers of `--answers FILE`: JSON, a list (in order) or an object (by request key).
fn read_answers(path: &Path) -> Result<ScriptedAsker, CliError> {
    let shown = path.display();
    let text =
        std::fs::read_to_string(path).map_err(io(format!("cannot read --answers {shown}")))?;
    let answers: Value = serde_json::from_str(&text)
        .map_err(|e| CliError::Usage(format!("--answers {shown} is not valid JSON: {e}")))?;
    ScriptedAsker::from_json(&answers)
        .map_err(|e| CliError::Usage(format!("--answers {shown}: {e}")))
}
