//! `toolhost serve [--toolsets a,b] [--disable c] [--watch] [--http ADDR [--stateless]
//! [--auth-token-env NAME]] [--metrics ADDR]`: the MCP server on stdio, or on streamable
//! HTTP. SIGINT and SIGTERM shut it down gracefully (running calls get `[serve]
//! drain_ms`), exit 0; the trace exporter is flushed on the way out.

use super::Cli;
use super::error::{CliError, io};
use crate::mcp::server::Shared;
use crate::{Selection, ToolsetSelection};
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
    pub(super) metrics: Option<&'a str>,
}

/// Serves until the client closes stdin (stdio) or a signal arrives, then flushes the
/// spans not yet exported.
pub(super) fn run(cli: &Cli, args: &ServeArgs<'_>) -> Result<ExitCode, CliError> {
    let served = serve(cli, args);
    super::telemetry::flush();
    served
}

/// Serves until the client closes stdin (stdio) or a signal arrives.
fn serve(cli: &Cli, args: &ServeArgs<'_>) -> Result<ExitCode, CliError> {
    // Over stdio one client sends one message at a time: a single-threaded runtime keeps
    // the reader, rmcp and the writer on one thread, where each message used to wake two
    // workers (thread switches were most of a call's CPU). Lua runs on the VMs' own threads
    // and probes on blocking threads either way. HTTP serves many connections: this thread
    // accepts them and serves its share, `[serve] http_threads` threads in all (default:
    // one per core), each with a single-threaded runtime of its own.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(io("cannot start the async runtime"))?;
    // Listening from here on: a signal while the host starts its MCP servers still ends
    // the server in order (and its servers' children with it).
    let stop = {
        let _context = runtime.enter();
        let signal = crate::shutdown::listen();
        async move {
            signal.await;
        }
    };
    // Metrics are recorded when something can read them: the HTTP server's `/metrics`,
    // or `--metrics ADDR`. Installed before the host is built: what it records while it
    // starts (an external MCP server connecting) counts too.
    let metrics = match args.http.is_some() || args.metrics.is_some() {
        true => Some(super::telemetry::install_metrics()?),
        false => None,
    };
    // Serving takes many calls: the pool size comes from the config (default: cores).
    let host = super::build_with(cli, None, None, /*interactive*/ false)?;
    let selection = Selection {
        toolsets: ToolsetSelection {
            enabled: args.toolsets.map(<[String]>::to_vec),
            disabled: args.disable.to_vec(),
        },
        scope: cli.scope.clone(),
        ..Selection::default()
    };
    let render = metrics
        .clone()
        .map(|handle| -> crate::mcp::server::http::metrics::Render {
            std::sync::Arc::new(move || handle.render())
        });
    let metrics_addr = match args.metrics {
        Some(addr) => Some(crate::mcp::server::http::parse_addr(addr)?),
        None => None,
    };
    let http = match args.http {
        Some(addr) => {
            let (addr, mut options) = http_options(&host, addr, args)?;
            if let Some(render) = &render {
                let public = host.config().config.telemetry.metrics_public;
                options = options.with_metrics(render.clone(), public);
            }
            Some((addr, options))
        }
        None => None,
    };
    // An audit log that cannot be written stops the start (a write failing later is
    // reported on stderr and counted, and the call still answers).
    {
        let config = host.config();
        let base = config.path.as_deref().and_then(std::path::Path::parent);
        let audit = &config.config.audit;
        crate::mcp::server::audit_check(audit.path.as_deref(), audit.max_bytes, base)
            .map_err(CliError::Usage)?;
    }
    let watcher = match args.watch {
        true => Some(host.watch()?),
        false => None,
    };
    // A named request-state key that is unset or too short stops the start: a fleet would
    // otherwise seal with per-process keys that no other process can open.
    {
        let config = host.config();
        let serve = &config.config.serve;
        crate::mcp::server::input::seal::Sealer::from_config(
            serve.state_key_env.as_deref(),
            serve.input_request_ttl_ms,
        )
        .map_err(CliError::Usage)?;
    }
    let shared = Shared::new(host, selection);
    let quiet = cli.quiet;
    // The watcher reloads the host; every session hears of reloads that change its tools.
    let mut writer_done = None;
    let served = runtime.block_on(async {
        let metrics_stop = tokio_util::sync::CancellationToken::new();
        if let Some(handle) = metrics {
            tokio::spawn(super::telemetry::upkeep(handle));
        }
        if let (Some(addr), Some(render)) = (metrics_addr, render) {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(io(format!("cannot listen on {addr} (--metrics)")))?;
            let bound = listener
                .local_addr()
                .map_err(io("cannot read the bound address"))?;
            if !quiet {
                eprintln!("toolhost: serving metrics at http://{bound}/metrics");
            }
            let stop = metrics_stop.clone();
            tokio::spawn(async move {
                if let Err(e) =
                    crate::mcp::server::http::metrics::serve_metrics(listener, render, stop).await
                {
                    tracing::error!("the metrics listener stopped: {e}");
                }
            });
        }
        let _stop_metrics = metrics_stop.drop_guard();
        let served: Result<(), CliError> = match http {
            Some((addr, options)) => {
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .map_err(io(format!("cannot listen on {addr}")))?;
                let bound = listener
                    .local_addr()
                    .map_err(io("cannot read the bound address"))?;
                if !quiet {
                    eprintln!("toolhost: serving MCP at http://{bound}/mcp");
                }
                Ok(crate::mcp::server::http::serve(shared, listener, options, stop).await?)
            }
            None => {
                let stdio =
                    crate::mcp::server::stdio::open().map_err(io("cannot open stdin/stdout"))?;
                writer_done = stdio.written;
                let (input, output, direct) = (stdio.input, stdio.output, stdio.direct);
                Ok(crate::mcp::server::guard::serve(shared, input, output, direct, stop).await?)
            }
        };
        drop(watcher);
        served
    });
    // Calls still running when the client left are not waited for.
    runtime.shutdown_timeout(Duration::from_millis(500));
    // The last answers are still on their way to stdout.
    if let Some(written) = writer_done {
        written.wait(Duration::from_millis(500));
    }
    served?;
    Ok(ExitCode::SUCCESS)
}

/// The HTTP address and options from the flags and `[serve]`: the `default` token
/// (`--auth-token-env`, else `auth_token_env`) and `[[serve.tokens]]`, each read from its
/// variable now (unset or empty: an error naming the token and the variable, never a
/// value); a non-loopback bind needs credentials (checked here too, before anything is
/// bound).
fn http_options(
    host: &crate::Host,
    addr: &str,
    args: &ServeArgs<'_>,
) -> Result<(std::net::SocketAddr, crate::HttpOptions), CliError> {
    let addr = crate::mcp::server::http::parse_addr(addr)?;
    let config = host.config();
    let serve = &config.config.serve;
    let source = args
        .auth_token_env
        .map(str::to_string)
        .or_else(|| serve.auth_token_env.clone());
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let mut options = crate::HttpOptions::default()
        .with_stateless(args.stateless)
        .with_threads(cores);
    if let Some(name) = source {
        match std::env::var(&name) {
            Ok(token) if !token.trim().is_empty() => {
                options = options
                    .with_bearer_token(token.trim())
                    .with_token_source(name);
            }
            _ => {
                return Err(CliError::NoToken(name));
            }
        }
    }
    for (i, token) in serve.tokens.iter().enumerate() {
        // The config check made sure both are set.
        let name = token.name.clone().unwrap_or_default();
        let variable = token.token_env.clone().unwrap_or_default();
        match std::env::var(&variable) {
            Ok(value) if !value.trim().is_empty() => {
                options = options.with_named_token_from(name, value.trim(), variable);
            }
            _ => {
                return Err(CliError::NoNamedToken {
                    index: i,
                    name,
                    variable,
                });
            }
        }
    }
    crate::mcp::server::http::check_exposure(addr, &options, serve.oauth.is_some())?;
    Ok((addr, options))
}
