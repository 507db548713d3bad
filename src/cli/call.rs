//! `toolhost call NAME [ARGS|-]`.

use super::Cli;
use super::error::{CliError, io};
use crate::CallContext;
use serde_json::Value;
use std::io::Read;
use std::process::ExitCode;

/// Calls the tool and prints the result: text raw, objects as compact JSON. Exit 1 when
/// the result is an error object.
pub(super) fn run(cli: &Cli, name: &str, args: Option<&str>) -> Result<ExitCode, CliError> {
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
    let host = super::build(cli, None, super::ONE_SHOT_VMS)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(io("cannot start the async runtime"))?;
    let ctx = CallContext {
        scope: cli.scope.clone(),
        ..CallContext::default()
    };
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
