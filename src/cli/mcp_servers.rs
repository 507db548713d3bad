//! `[mcp_servers.*]` in `discover` (one row per server: up or down, its tools or the
//! reason) and in `list` (a note for a server that is down before its tools were ever
//! listed, since it has no tool rows).

use crate::Host;
use serde_json::{Value, json};

/// One server as `discover` shows it.
pub(super) struct Row {
    name: String,
    /// Why its tools are unavailable (starting, or down); `None` when it is up.
    reason: Option<String>,
    tools: Vec<String>,
}

/// Every configured server, by name, with the tools registered for it.
pub(super) fn rows(host: &Host) -> Vec<Row> {
    let servers = host.mcp_servers();
    if servers.is_empty() {
        return Vec::new();
    }
    let registered = host.entries(None);
    let mut rows: Vec<Row> = servers
        .into_iter()
        .map(|server| {
            let source = format!("mcp:{}", server.name);
            Row {
                tools: registered
                    .iter()
                    .filter(|tool| tool.source.to_string() == source)
                    .map(|tool| tool.name.to_string())
                    .collect(),
                reason: server.status.reason(&server.name),
                name: server.name,
            }
        })
        .collect();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    rows
}

impl Row {
    /// The `discover --json` object: the verdict keys of docs/cli.md, `path` = `mcp:NAME`,
    /// `reason` = `mcp_server`, `registers` = connected, `error` = why not.
    pub(super) fn to_json(&self) -> Value {
        json!({
            "path": format!("mcp:{}", self.name),
            "registers": self.reason.is_none(),
            "reason": "mcp_server",
            "cached": false,
            "error": self.reason,
            "tools": self.tools,
        })
    }

    /// The `discover` table row.
    pub(super) fn to_cells(&self) -> [String; 4] {
        let detail = match &self.reason {
            Some(reason) => format!("error: {reason}"),
            None => self.tools.join(", "),
        };
        [
            format!("mcp:{}", self.name),
            "mcp_server".to_string(),
            String::new(),
            detail,
        ]
    }

    /// What `list` says of a server that is down with no tools registered.
    pub(super) fn note_without_tools(&self) -> Option<String> {
        match (self.tools.is_empty(), &self.reason) {
            (true, Some(reason)) => Some(format!("{reason} (no tools known yet)")),
            _ => None,
        }
    }
}
