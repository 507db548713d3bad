//! `toolhost serve [--toolsets a,b] [--disable c] [--watch] [--http ADDR [--stateless]
//! [--auth-token-env NAME]]`: the MCP server on stdio, or on streamable HTTP. SIGINT and
//! SIGTERM shut it down gracefully (running calls get `[serve] drain_ms`), exit 0.

use super::Cli;
use crate::Selection;
use crate::mcp::server::Shared;
use std::process::ExitCode;
use std::time::Duration;

/// The flags of `serve`.
pub(super) struct ServeArgs<'a> {
    pub(super) toolsets: Option<&'a [String]>,
    pub(super) disable: &'a [String],
    pub(super) watch: bool,
    pub(super) http: Option<&'a str>,
    pub(super) stateless: bool,
    pub(super) auth_token_env: Option<&'a str>,
}

/// Serves until the client closes stdin (stdio) or a signal arrives.
pub(super) fn run(cli: &Cli, args: &ServeArgs<'_>) -> Result<ExitCode, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    // Serving takes many calls: the pool size comes from the config (default: cores).
    let host = super::build_with(cli, None, None, /*interactive*/ false)?;
    let selection = Selection {
        enabled: args.toolsets.map(<[String]>::to_vec),
        disabled: args.disable.to_vec(),
        scope: cli.scope.clone(),
        ..Selection::default()
    };
    let http = match args.http {
        Some(addr) => Some(http_options(&host, addr, args)?),
        None => None,
    };
    let watcher = match args.watch {
        true => Some(host.watch().map_err(|e| e.to_string())?),
        false => None,
    };
    let shared = Shared::new(host, selection);
    let quiet = cli.quiet;
    // The watcher reloads the host; every session hears of reloads that change its tools.
    let served = runtime.block_on(async move {
        let served = match http {
            Some((addr, options)) => {
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
                let bound = listener
                    .local_addr()
                    .map_err(|e| format!("cannot read the bound address: {e}"))?;
                if !quiet {
                    eprintln!("toolhost: serving MCP at http://{bound}/mcp");
                }
                crate::mcp::http::serve(shared, listener, options, crate::mcp::shutdown::signal())
                    .await
                    .map_err(|e| e.to_string())
            }
            None => {
                let input = tokio::io::BufReader::new(tokio::io::stdin());
                crate::mcp::guard::serve(
                    shared,
                    input,
                    tokio::io::stdout(),
                    crate::mcp::shutdown::signal(),
                )
                .await
                .map_err(|e| e.to_string())
            }
        };
        drop(watcher);
        served
    });
    // Calls still running when the client left are not waited for.
    runtime.shutdown_timeout(Duration::from_millis(500));
    served?;
    Ok(ExitCode::SUCCESS)
}

/// The HTTP address and options from the flags and `[serve]`; a non-loopback bind needs a
/// token (checked here too, before anything is bound).
fn http_options(
    host: &crate::Host,
    addr: &str,
    args: &ServeArgs<'_>,
) -> Result<(std::net::SocketAddr, crate::HttpOptions), String> {
    let addr = crate::mcp::http::parse_addr(addr)?;
    let source = args
        .auth_token_env
        .map(str::to_string)
        .or_else(|| host.config().config.serve.auth_token_env.clone());
    let mut options = crate::HttpOptions::default().with_stateless(args.stateless);
    if let Some(name) = source {
        match std::env::var(&name) {
            Ok(token) if !token.trim().is_empty() => {
                options = options
                    .with_bearer_token(token.trim())
                    .with_token_source(name);
            }
            _ => {
                return Err(format!(
                    "the auth token variable ${name} is not set or empty \
                     ([serve] auth_token_env / --auth-token-env)"
                ));
            }
        }
    }
    crate::mcp::http::check_exposure(addr, &options).map_err(|e| e.to_string())?;
    Ok((addr, options))
}
