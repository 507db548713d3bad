//! `toolhost serve [--toolsets a,b] [--disable c] [--watch]`: the MCP server on stdio.

use super::Cli;
use rmcp::ServiceExt;
use std::process::ExitCode;
use toolhost::Selection;
use toolhost::mcp::McpServer;

/// Serves until the client closes stdin.
pub fn run(
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
    runtime.block_on(async move {
        let server = McpServer::new(host, selection);
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| format!("MCP session failed to start: {e}"))?;
        if let Some(mut watcher) = watcher {
            let peer = running.peer().clone();
            tokio::spawn(async move {
                while let Some(_event) = watcher.next().await {
                    if let Err(e) = peer.notify_tool_list_changed().await {
                        tracing::warn!("cannot send tools/list_changed: {e}");
                        break;
                    }
                }
            });
        }
        running
            .waiting()
            .await
            .map_err(|e| format!("MCP session ended abnormally: {e}"))?;
        Ok(ExitCode::SUCCESS)
    })
}
