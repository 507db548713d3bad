//! The clap front end: global flags, one file per subcommand, exit codes of docs/cli.md
//! (0 ok, 1 the result is an error object or `check` found a problem, 2 usage or setup).

/// Prints a line to stdout like `println!`, but a closed stdout (`toolhost list | head`)
/// ends the process quietly with status 0, as `ls | head` does, instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::print_line(format_args!($($arg)*))
    };
}

mod approve;
mod arena;
mod call;
mod check;
mod completions;
mod content;
mod discover;
mod error;
mod explain;
mod init;
mod list;
mod mcp_config;
mod mcp_servers;
mod new;
mod pack;
mod schema;
mod serve;
mod store;
mod stubs;
mod telemetry;
mod test;
mod watch;

use crate::{Format, Host, HostBuilder};
use clap::{ArgAction, Parser, Subcommand};
use error::CliError;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// A host for LLM-agent tools written in Lua.
#[derive(Debug, Parser)]
#[command(name = "toolhost", version, about, propagate_version = true)]
pub struct Cli {
    /// A built-in tool directory (repeatable; default ./tools-lua).
    #[arg(long = "tools-dir", value_name = "DIR", global = true)]
    tools_dir: Vec<PathBuf>,
    /// The configuration file (default: $TOOLHOST_CONFIG, else ./toolhost.toml).
    #[arg(long, value_name = "FILE", global = true)]
    config: Option<PathBuf>,
    /// Where the discovery cache lives.
    #[arg(long = "cache-dir", value_name = "DIR", global = true)]
    cache_dir: Option<PathBuf>,
    /// The caller's scope overlay.
    #[arg(long, value_name = "S", global = true)]
    scope: Option<String>,
    /// More log output (repeat for more).
    #[arg(short, long, action = ArgAction::Count, global = true)]
    verbose: u8,
    /// Only errors on stderr.
    #[arg(short, long, global = true)]
    quiet: bool,
    /// Leave out the shipped tool library (as [library] enabled = false).
    #[arg(
        long = "no-library",
        global = true,
        env = "TOOLHOST_NO_LIBRARY",
        value_parser = clap::builder::FalseyValueParser::new()
    )]
    no_library: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the tools, sorted by name.
    List {
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print the model-facing definitions of the selected, available tools (JSON array).
    Schema {
        /// Toolsets to enable, comma-separated (default: config `enabled_toolsets`, else all).
        #[arg(long, value_delimiter = ',')]
        toolsets: Option<Vec<String>>,
        /// Toolsets to subtract, comma-separated (repeatable).
        #[arg(long, value_delimiter = ',')]
        disable: Vec<String>,
        /// Output format: openai (Chat Completions function tools), responses (OpenAI
        /// Responses API function tools), anthropic (Messages API tools), mcp (MCP tools).
        #[arg(long, default_value = "openai", value_parser = format_parser())]
        format: Format,
        /// OpenAI strict mode: every property required (optional ones nullable),
        /// additionalProperties false everywhere; unsupported keywords are left out and
        /// reported on stderr.
        #[arg(long)]
        strict: bool,
    },
    /// Serve the tools over MCP on stdio, or streamable HTTP with --http.
    Serve {
        /// Toolsets to offer, comma-separated (default: config `enabled_toolsets`, else all).
        #[arg(long, value_delimiter = ',')]
        toolsets: Option<Vec<String>>,
        /// Toolsets to hide, comma-separated (repeatable).
        #[arg(long, value_delimiter = ',')]
        disable: Vec<String>,
        /// Reload on changes and notify the client (notifications/tools/list_changed).
        #[arg(long)]
        watch: bool,
        /// Serve streamable HTTP at ADDR/mcp instead of stdio (HOST:PORT, or PORT for
        /// loopback; port 0 picks a free one).
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// No sessions (HTTP behind a load balancer).
        #[arg(long, requires = "http")]
        stateless: bool,
        /// Environment variable holding the bearer token HTTP clients must send
        /// (overrides [serve] auth_token_env).
        #[arg(long, value_name = "NAME", requires = "http")]
        auth_token_env: Option<String>,
        /// Serve Prometheus metrics at http://ADDR/metrics (HOST:PORT, or PORT for
        /// loopback); for a stdio server (an HTTP server also has them at /metrics).
        #[arg(long, value_name = "ADDR")]
        metrics: Option<String>,
    },
    /// Reload on every change to the tool directories or config; print each reload.
    Watch,
    /// Write a commented tool file NAME.lua into the first tool directory.
    New {
        /// The tool's (resource's, prompt's) name.
        name: String,
        /// Its toolset.
        #[arg(long, default_value = "custom")]
        toolset: String,
        /// Write a resource (registry.resource) instead of a tool.
        #[arg(long, conflicts_with = "prompt")]
        resource: bool,
        /// Write a prompt (registry.prompt) instead of a tool.
        #[arg(long)]
        prompt: bool,
    },
    /// Write LuaLS definitions of the host API to <first tool dir>/types/toolhost.lua.
    Stubs,
    /// Start a project: toolhost.toml, tools-lua/ with an example tool and its test.
    ///
    /// Writes toolhost.toml (every section, commented), tools-lua/ with an example tool and
    /// its test, LuaLS settings (.luarc.json, tools-lua/types/) and .gitignore lines for
    /// the store. Refuses to overwrite anything: names every file that exists.
    Init {
        /// The project directory (created if missing).
        dir: Option<PathBuf>,
        /// Also copy the shipped tool library into tools-lua/ for editing.
        #[arg(long)]
        with_library: bool,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) of toolhost.
    Man,
    /// Print an MCP client's configuration for this toolhost (stdio, or --http).
    McpConfig {
        /// The client: claude-desktop, claude-code, cursor, vscode, codex, gemini.
        #[arg(long, value_enum)]
        client: mcp_config::Client,
        /// The server's streamable HTTP URL (default: a stdio server the client starts).
        #[arg(long, value_name = "URL")]
        http: Option<String>,
        /// Environment variable holding the bearer token the client sends over HTTP.
        #[arg(long, value_name = "NAME", requires = "http")]
        token_env: Option<String>,
    },
    /// Print a tool's effects and annotations, each effect with its file:line.
    Explain {
        /// The tool's name.
        tool: String,
    },
    /// Show the discovery verdict of every candidate file.
    Discover {
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Parse, load and validate tool files without serving; exit 1 on any problem.
    Check {
        /// Files to check (default: every candidate in the tool directories).
        files: Vec<PathBuf>,
    },
    /// Run Lua test files (*_test.lua beside the tools, tests-lua/); exit 1 on a failure.
    Test {
        /// Test files or directories (default: every tool directory and ./tests-lua).
        paths: Vec<PathBuf>,
        /// Print one JSON object (tests, passed, failed) instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Call a tool and print its result.
    Call {
        /// The tool name.
        name: String,
        /// Arguments as JSON text, or `-` to read them from stdin (default `{}`).
        args: Option<String>,
        /// Answers for the tool's input requests (`ctx.ask`, `ctx.roots`, `ctx.sample`):
        /// a JSON file holding a list (in order) or an object (by request key).
        #[arg(long, value_name = "FILE")]
        answers: Option<PathBuf>,
    },
    /// Tool packs from git: add, update, remove, list, verify.
    Pack {
        #[command(subcommand)]
        command: pack::PackCommand,
    },
    /// The store's tables and data: migrate, export, import.
    Store {
        #[command(subcommand)]
        command: store::StoreCommand,
    },
    /// List the resources and resource templates, sorted by URI.
    Resources {
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Read a resource and print its contents (JSON array).
    Read {
        /// The resource URI (a fixed URI or one a template matches).
        uri: String,
    },
    /// List the prompts, sorted by name.
    Prompts {
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Render a prompt and print its messages (JSON).
    Prompt {
        /// The prompt name.
        name: String,
        /// Arguments as a JSON object of strings (default `{}`).
        args: Option<String>,
    },
}

/// One-shot commands make one call at most: one VM starts fastest.
const ONE_SHOT_VMS: Option<usize> = Some(1);

/// Exit code for usage and setup errors.
pub const EXIT_SETUP: u8 = 2;

/// Parses the command line and runs it.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    // The server is quiet by default: MCP clients show its stderr to their users.
    let serving = matches!(cli.command, Command::Serve { .. });
    if !serving && !matches!(cli.command, Command::Watch) {
        arena::share_one_arena();
    }
    let reports_problems = matches!(
        cli.command,
        Command::Check { .. } | Command::Discover { .. } | Command::Watch
    );
    // Traces are set up with logging (one subscriber), before anything loads: `serve`
    // reads `[telemetry]` first.
    let telemetry = serving.then(|| {
        let config = crate::Host::telemetry_config(cli.config.as_deref());
        telemetry::TelemetrySettings::resolve(
            config.otlp_endpoint.as_deref(),
            config.service_name.as_deref(),
            |name| std::env::var(name).ok(),
        )
    });
    if let Err(problem) = init_logging(
        cli.verbose,
        cli.quiet,
        serving,
        reports_problems,
        telemetry.as_ref(),
    ) {
        eprintln!("toolhost: {problem}");
        return ExitCode::from(2);
    }
    // A one-shot command interrupted ends its MCP servers before it goes.
    #[cfg(feature = "mcp-client")]
    if !serving {
        Host::end_mcp_servers_on_signal();
    }
    let outcome = match &cli.command {
        Command::List { json } => one_shot(&cli, None, |host| list::run(host, &cli, *json)),
        Command::Schema {
            toolsets,
            disable,
            format,
            strict,
        } => one_shot(&cli, None, |host| {
            schema::run(host, &cli, toolsets.as_deref(), disable, *format, *strict)
        }),
        Command::Serve {
            toolsets,
            disable,
            watch,
            http,
            stateless,
            auth_token_env,
            metrics,
        } => serve::run(
            &cli,
            &serve::ServeArgs {
                toolsets: toolsets.as_deref(),
                disable,
                watch: *watch,
                http: http.as_deref(),
                stateless: *stateless,
                auth_token_env: auth_token_env.as_deref(),
                metrics: metrics.as_deref(),
            },
        ),
        Command::Watch => watch::run(&cli),
        Command::New {
            name,
            toolset,
            resource,
            prompt,
        } => {
            let kind = match (resource, prompt) {
                (true, _) => new::Kind::Resource,
                (_, true) => new::Kind::Prompt,
                _ => new::Kind::Tool,
            };
            new::run(&cli, name, toolset, kind)
        }
        Command::Stubs => stubs::run(&cli),
        Command::Init { dir, with_library } => init::run(dir.as_deref(), *with_library),
        Command::Completions { shell } => Ok(completions::completions(*shell)),
        Command::Man => completions::man(),
        Command::McpConfig {
            client,
            http,
            token_env,
        } => mcp_config::run(&cli, *client, http.as_deref(), token_env.as_deref()),
        Command::Discover { json } => one_shot(&cli, None, |host| discover::run(host, *json)),
        Command::Explain { tool } => one_shot(&cli, None, |host| explain::run(host, &cli, tool)),
        Command::Check { files } => {
            let only = (!files.is_empty()).then(|| files.clone());
            one_shot_with(&cli, only, true, |host| check::run(host, files))
        }
        Command::Call {
            name,
            args,
            answers,
        } => call::run(&cli, name, args.as_deref(), answers.as_deref()),
        Command::Test { paths, json } => test::run(&cli, paths, *json),
        Command::Store { command } => store::run(&cli, command),
        Command::Pack { command } => pack::run(&cli, command),
        Command::Resources { json } => one_shot(&cli, None, |host| content::resources(host, *json)),
        Command::Read { uri } => content::read(&cli, uri),
        Command::Prompts { json } => one_shot(&cli, None, |host| content::prompts(host, *json)),
        Command::Prompt { name, args } => content::prompt(&cli, name, args.as_deref()),
    };
    // No MCP server child outlives the command, whoever still holds a host.
    #[cfg(feature = "mcp-client")]
    Host::end_all_mcp_servers();
    match outcome {
        Ok(code) => code,
        Err(message) => {
            eprintln!("toolhost: {message}");
            ExitCode::from(EXIT_SETUP)
        }
    }
}

/// `--format`: the format names (listed by `--help` and in errors), parsed to a [`Format`].
fn format_parser() -> impl clap::builder::TypedValueParser<Value = Format> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(["openai", "responses", "anthropic", "mcp"])
        .try_map(|name| name.parse::<Format>())
}

fn init_logging(
    verbose: u8,
    quiet: bool,
    serving: bool,
    reports_problems: bool,
    telemetry: Option<&telemetry::TelemetrySettings>,
) -> Result<(), String> {
    let default = match (quiet, verbose + u8::from(!serving)) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        (false, _) => "trace",
    };
    // Commands that print load problems themselves do not log them a second time.
    let default = match reports_problems {
        true => format!("{default},toolhost::load=off,toolhost::mcp_client=off"),
        false => default.to_string(),
    };
    // rmcp's own lifecycle lines (one per MCP server connection) only when asked for.
    let default = match verbose {
        0 => format!("{default},rmcp=warn"),
        _ => default,
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("TOOLHOST_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    // Each layer filters for itself: the log lines by `TOOLHOST_LOG`, the exporter exactly
    // the spans meant for it (with no exporter, those spans stay disabled).
    let logs = tracing_subscriber::Layer::with_filter(
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_target(false)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .without_time(),
        filter,
    );
    let registry = tracing_subscriber::registry().with(logs);
    let traces = match telemetry {
        Some(settings) => telemetry::trace_layer(settings)?,
        None => None,
    };
    registry.with(traces).init();
    Ok(())
}

/// Builds a one-VM host, runs `command` with it, and lets the process exit without tearing
/// the host down: closing a VM and freeing a registry of 1,000 tools costs a one-shot
/// command several milliseconds that the OS does for free at exit. A host with MCP servers
/// is dropped properly, so their process groups are killed.
fn one_shot<T>(
    cli: &Cli,
    only_files: Option<Vec<PathBuf>>,
    command: impl FnOnce(&Host) -> T,
) -> Result<T, CliError> {
    one_shot_with(cli, only_files, false, command)
}

/// [`one_shot`], optionally running every file at load (no registration cache).
fn one_shot_with<T>(
    cli: &Cli,
    only_files: Option<Vec<PathBuf>>,
    run_every_file: bool,
    command: impl FnOnce(&Host) -> T,
) -> Result<T, CliError> {
    let mut builder = builder(cli, only_files, ONE_SHOT_VMS, /*interactive*/ true);
    if run_every_file {
        builder = builder.run_every_file();
    }
    let host = builder.build()?;
    let outcome = command(&host);
    leave_for_exit(host);
    Ok(outcome)
}

/// Forgets `host` (the process is about to exit) unless it runs MCP server children.
pub(crate) fn leave_for_exit(host: Host) {
    #[cfg(feature = "mcp-client")]
    if !host.mcp_servers().is_empty() {
        return;
    }
    std::mem::forget(host);
}

/// Builds the host from the global flags; `vms` overrides the pool size. One-shot commands
/// may ask for approval on the terminal; the MCP server never reads the terminal (stdin is
/// the protocol), so it uses the configured `[approval] default`.
fn build(
    cli: &Cli,
    only_files: Option<Vec<PathBuf>>,
    vms: Option<usize>,
) -> Result<Host, CliError> {
    build_with(cli, only_files, vms, /*interactive*/ true)
}

fn build_with(
    cli: &Cli,
    only_files: Option<Vec<PathBuf>>,
    vms: Option<usize>,
    interactive: bool,
) -> Result<Host, CliError> {
    Ok(builder(cli, only_files, vms, interactive).build()?)
}

/// The host builder for the global flags.
fn builder(
    cli: &Cli,
    only_files: Option<Vec<PathBuf>>,
    vms: Option<usize>,
    interactive: bool,
) -> HostBuilder {
    // The command has the shipped library unless `--no-library` or `[library] enabled =
    // false`.
    let mut builder: HostBuilder = match cli.no_library {
        true => Host::builder().library(false),
        false => Host::builder().library_by_default(),
    };
    for dir in &cli.tools_dir {
        builder = builder.tools_dir(dir);
    }
    if let Some(config) = &cli.config {
        builder = builder.config_file(config);
    }
    if let Some(cache) = &cli.cache_dir {
        builder = builder.cache_dir(cache);
    }
    if let Some(files) = only_files {
        builder = builder.only_files(files);
    }
    if let Some(vms) = vms {
        builder = builder.vms(vms);
    }
    if interactive {
        builder =
            builder.approver_from_config(|policy| approve::TerminalApprover { fallback: policy });
    }
    builder
}

/// Writes one line to stdout (see `outln!`).
pub(crate) fn print_line(line: std::fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_fmt(line)
        .and_then(|()| stdout.write_all(b"\n"))
        .and_then(|()| stdout.flush());
    if let Err(error) = written {
        // Exiting here skips every destructor: end the MCP servers' children first.
        #[cfg(feature = "mcp-client")]
        Host::end_all_mcp_servers();
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("toolhost: cannot write to stdout: {error}");
        std::process::exit(2);
    }
}
