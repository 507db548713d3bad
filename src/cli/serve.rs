//! `toolhost serve [--toolsets a,b] [--disable c] [--watch]`: the MCP server on stdio.

use super::Cli;
use crate::Selection;
use std::process::ExitCode;
use std::time::Duration;

/// Serves until the client closes stdin.
pub(super) fn run(
    cli: &Cli,
    toolsets: Option<&[String]>,
    disable: &[String],
    watch: bool,
) -> Result<ExitCode, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    // Serving takes many calls: the pool size comes from the config (default: cores).
    let host = super::build_with(cli, None, None, /*interactive*/ false)?;
    let selection = Selection {
        enabled: toolsets.map(<[String]>::to_vec),
        disabled: disable.to_vec(),
        scope: cli.scope.clone(),
        ..Selection::default()
    };
    let watcher = match watch {
        true => Some(host.watch().map_err(|e| e.to_string())?),
        false => None,
    };
    // The watcher reloads the host; the MCP session hears of every reload.
    let served = runtime.block_on(async move {
        let input = tokio::io::BufReader::new(tokio::io::stdin());
        let served = host.serve_mcp(selection, input, tokio::io::stdout()).await;
        drop(watcher);
        served
    });
    // Calls still running when the client left are not waited for.
    runtime.shutdown_timeout(Duration::from_millis(500));
    served.map_err(|e| e.to_string())?;
    Ok(ExitCode::SUCCESS)
}
