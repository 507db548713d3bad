//! `toolhost serve [--toolsets a,b] [--disable c] [--watch]`: the MCP server on stdio.

use super::Cli;
use crate::Selection;
use crate::mcp::{McpServer, guard};
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
    let max_line_bytes = host
        .config()
        .config
        .serve
        .max_request_bytes
        .unwrap_or(guard::DEFAULT_MAX_LINE_BYTES);
    let served = runtime.block_on(async move {
        let server = McpServer::new(host, selection);
        let input = tokio::io::BufReader::new(tokio::io::stdin());
        guard::serve(server, input, tokio::io::stdout(), max_line_bytes, |peer| {
            if let Some(mut watcher) = watcher {
                let peer = peer.clone();
                tokio::spawn(async move {
                    while let Some(_event) = watcher.next().await {
                        if let Err(e) = peer.notify_tool_list_changed().await {
                            tracing::warn!("cannot send tools/list_changed: {e}");
                            break;
                        }
                    }
                });
            }
        })
        .await
    });
    // Calls still running when the client left are not waited for.
    runtime.shutdown_timeout(Duration::from_millis(500));
    served?;
    Ok(ExitCode::SUCCESS)
}
