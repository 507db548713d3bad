//! `toolhost mcp-config --client NAME [--http URL --token-env NAME]`: the snippet each MCP
//! client's configuration expects (docs/mcp-clients.md). Stdio: the absolute path of this
//! binary with absolute `--config` / `--tools-dir`, so the client can start it from any
//! directory. HTTP: the URL, and the bearer token as a reference to an environment variable
//! in the client's own syntax (never the token itself).

use super::Cli;
use super::error::CliError;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The server's name in every client's configuration.
const SERVER_NAME: &str = "toolhost";

/// The MCP clients `mcp-config` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum Client {
    /// Claude Desktop: `claude_desktop_config.json`.
    ClaudeDesktop,
    /// Claude Code: `.mcp.json` (or `claude mcp add-json toolhost '<the server object>'`).
    ClaudeCode,
    /// Cursor: `.cursor/mcp.json` or `~/.cursor/mcp.json`.
    Cursor,
    /// VS Code: `.vscode/mcp.json`.
    Vscode,
    /// Codex: `~/.codex/config.toml` (TOML).
    Codex,
    /// Gemini CLI: `.gemini/settings.json` or `~/.gemini/settings.json`.
    Gemini,
}

/// How the client reaches the server.
enum Transport {
    /// The client starts `command args`.
    Stdio { command: String, args: Vec<String> },
    /// The client connects to `url`, sending the token held in `token_env` if any.
    Http {
        url: String,
        token_env: Option<String>,
    },
}

/// Prints the snippet for `client`.
pub(super) fn run(
    cli: &Cli,
    client: Client,
    http: Option<&str>,
    token_env: Option<&str>,
) -> Result<ExitCode, CliError> {
    let transport = match http {
        Some(url) => http_transport(url, token_env)?,
        None => stdio_transport(cli)?,
    };
    let snippet = snippet(client, &transport)?;
    outln!("{}", snippet.trim_end());
    Ok(ExitCode::SUCCESS)
}

/// `--http URL`: an `http(s)://` URL; `--token-env`: a variable name.
fn http_transport(url: &str, token_env: Option<&str>) -> Result<Transport, CliError> {
    let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
    if !scheme_ok || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(CliError::Usage(format!(
            "--http {url:?}: expected the server's http:// or https:// URL (e.g. \
             http://127.0.0.1:8080/mcp)"
        )));
    }
    if let Some(name) = token_env {
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(CliError::Usage(format!(
                "--token-env {name:?}: expected an environment variable name (letters, \
                 digits, _; not starting with a digit)"
            )));
        }
    }
    Ok(Transport::Http {
        url: url.to_string(),
        token_env: token_env.map(str::to_string),
    })
}

/// This binary, absolute, with the config file and tool directories it would use now.
fn stdio_transport(cli: &Cli) -> Result<Transport, CliError> {
    let command = std::env::current_exe().map_err(super::error::io(
        "cannot tell where this toolhost binary is",
    ))?;
    let (config, config_names_dirs) = crate::Host::config_file_found(cli.config.as_deref())?;
    let mut args: Vec<String> = Vec::new();
    if let Some(config) = config {
        args.push("--config".into());
        args.push(absolute(&config).display().to_string());
    }
    let mut dirs: Vec<PathBuf> = cli.tools_dir.clone();
    if dirs.is_empty() && !config_names_dirs && Path::new("tools-lua").is_dir() {
        dirs.push(PathBuf::from("tools-lua"));
    }
    for dir in dirs {
        args.push("--tools-dir".into());
        args.push(absolute(&dir).display().to_string());
    }
    args.push("serve".into());
    Ok(Transport::Stdio {
        command: command.display().to_string(),
        args,
    })
}

/// `path` absolute and without `.`/`..` (symlinks resolved when it exists).
fn absolute(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| {
        std::env::current_dir()
            .map(|cwd| cwd.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    })
}

/// The configuration text `client` expects for `transport`.
fn snippet(client: Client, transport: &Transport) -> Result<String, CliError> {
    let server = match (client, transport) {
        (Client::Codex, _) => return Ok(codex(transport)),
        (_, Transport::Stdio { command, args }) => {
            let mut server = json!({ "command": command, "args": args });
            // VS Code and Claude Code name the transport; the others infer it.
            if matches!(client, Client::Vscode | Client::ClaudeCode) {
                server["type"] = json!("stdio");
            }
            server
        }
        (Client::ClaudeDesktop, Transport::Http { .. }) => {
            return Err(CliError::Usage(
                "--client claude-desktop: Claude Desktop's configuration file starts stdio \
                 servers only; leave out --http (or add the URL as a custom connector in the \
                 app)"
                    .to_string(),
            ));
        }
        (_, Transport::Http { url, token_env }) => {
            let url_key = match client {
                // Gemini CLI's `url` is the older SSE transport; streamable HTTP is `httpUrl`.
                Client::Gemini => "httpUrl",
                _ => "url",
            };
            let mut server = serde_json::Map::new();
            if matches!(client, Client::Vscode | Client::ClaudeCode) {
                server.insert("type".into(), json!("http"));
            }
            server.insert(url_key.into(), json!(url));
            if let Some(name) = token_env {
                // Each client's own syntax for an environment variable in a header.
                let reference = match client {
                    Client::Cursor | Client::Vscode => format!("${{env:{name}}}"),
                    _ => format!("${{{name}}}"),
                };
                server.insert(
                    "headers".into(),
                    json!({ "Authorization": format!("Bearer {reference}") }),
                );
            }
            Value::Object(server)
        }
    };
    let key = match client {
        Client::Vscode => "servers",
        _ => "mcpServers",
    };
    let document = json!({ key: { SERVER_NAME: server } });
    serde_json::to_string_pretty(&document)
        .map_err(|e| CliError::Usage(format!("cannot print the configuration: {e}")))
}

/// Codex's `config.toml` table (its HTTP servers read the token from the variable named by
/// `bearer_token_env_var`).
fn codex(transport: &Transport) -> String {
    let mut server = toml::Table::new();
    match transport {
        Transport::Stdio { command, args } => {
            server.insert("command".into(), toml::Value::String(command.clone()));
            server.insert(
                "args".into(),
                toml::Value::Array(args.iter().cloned().map(toml::Value::String).collect()),
            );
        }
        Transport::Http { url, token_env } => {
            server.insert("url".into(), toml::Value::String(url.clone()));
            if let Some(name) = token_env {
                server.insert(
                    "bearer_token_env_var".into(),
                    toml::Value::String(name.clone()),
                );
            }
        }
    }
    let mut servers = toml::Table::new();
    servers.insert(SERVER_NAME.into(), toml::Value::Table(server));
    let mut document = toml::Table::new();
    document.insert("mcp_servers".into(), toml::Value::Table(servers));
    document.to_string()
}
