//! One bounded `tools/list`: all pages, but at most `max_tools` tools, `max_list_bytes`
//! bytes and `list_timeout_ms` (rmcp's `list_all_tools` follows cursors for as long as the
//! server hands them out — an endless listing grew the host's memory without bound).
//! A listing over a limit is an error that marks the server down with the reason.

use crate::config::McpServerConfig;
use rmcp::Peer;
use rmcp::RoleClient;
use rmcp::model::{PaginatedRequestParams, Tool};
use std::time::Duration;

/// Default `max_tools`.
pub(super) const DEFAULT_MAX_TOOLS: usize = 1_000;
/// Default `max_list_bytes`.
pub(super) const DEFAULT_MAX_LIST_BYTES: u64 = 8 * 1024 * 1024;
/// Default `list_timeout_ms`.
const DEFAULT_LIST_TIMEOUT: Duration = Duration::from_secs(30);

/// A server's listing limits.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    max_tools: usize,
    max_bytes: u64,
    timeout: Duration,
}

impl Limits {
    /// The limits of `config`'s section (defaults where unset).
    pub(super) fn of(config: &McpServerConfig) -> Self {
        Self {
            max_tools: config.max_tools.unwrap_or(DEFAULT_MAX_TOOLS),
            max_bytes: config.max_list_bytes.unwrap_or(DEFAULT_MAX_LIST_BYTES),
            timeout: config
                .list_timeout_ms
                .map(Duration::from_millis)
                .unwrap_or(DEFAULT_LIST_TIMEOUT),
        }
    }

    /// Most pages one listing may have: every page but the last brings at least one tool
    /// in any listing worth having, so more pages than tools allowed is an endless one.
    fn max_pages(&self) -> usize {
        self.max_tools.saturating_add(1)
    }
}

/// Why a listing failed.
#[derive(Debug)]
pub(super) enum ListError {
    /// Over a limit: the server is marked down with this reason.
    Limit(String),
    /// The request failed (an error answer, the session ended).
    Failed(String),
}

impl ListError {
    /// The reason, whichever kind.
    pub(super) fn into_reason(self) -> String {
        match self {
            ListError::Limit(reason) | ListError::Failed(reason) => reason,
        }
    }
}

/// Lists every page of `peer`'s tools within `limits`.
pub(super) async fn list(peer: &Peer<RoleClient>, limits: Limits) -> Result<Vec<Tool>, ListError> {
    match tokio::time::timeout(limits.timeout, pages(peer, limits)).await {
        Ok(listed) => listed,
        Err(_) => Err(ListError::Limit(format!(
            "tools/list took longer than {} ms (list_timeout_ms)",
            limits.timeout.as_millis()
        ))),
    }
}

async fn pages(peer: &Peer<RoleClient>, limits: Limits) -> Result<Vec<Tool>, ListError> {
    let mut tools = Vec::new();
    let mut bytes: u64 = 0;
    let mut cursor = None;
    for page in 1.. {
        if page > limits.max_pages() {
            return Err(ListError::Limit(format!(
                "tools/list went on for more than {} pages (max_tools = {} plus one)",
                limits.max_pages(),
                limits.max_tools
            )));
        }
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        let listed = peer
            .list_tools(Some(params))
            .await
            .map_err(|e| ListError::Failed(format!("tools/list failed: {e}")))?;
        bytes = bytes.saturating_add(json_len(&listed.tools));
        tools.extend(listed.tools);
        if tools.len() > limits.max_tools {
            return Err(ListError::Limit(format!(
                "it lists more than {} tools (max_tools)",
                limits.max_tools
            )));
        }
        if bytes > limits.max_bytes {
            return Err(ListError::Limit(format!(
                "its tool list is larger than {} bytes (max_list_bytes)",
                limits.max_bytes
            )));
        }
        match listed.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    Ok(tools)
}

/// The size of `tools` as JSON, counted without building the text.
fn json_len(tools: &[Tool]) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len() as u64);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, tools);
    count.0
}
