//! The host's side of the MCP client: when a server's tools or status change, its tools in
//! the registry are replaced (the Lua tools and VMs stay as they are), the generation moves
//! on (so memoised definitions are recomputed) and a [`ReloadEvent`] tells the host's own
//! MCP sessions, which send `notifications/tools/list_changed` if what they list changed.

use super::reload::{ReloadEvent, fingerprint};
use super::{Host, HostInner};
use crate::mcp_client::ServerStatus;
use crate::registry::Source;
use std::sync::{Arc, Weak};
use std::time::Instant;

impl Host {
    /// Subscribes the host to its MCP servers' changes (a weak link: the clients live
    /// inside the host and must not keep it alive).
    pub(super) fn listen_to_mcp_servers(&self) {
        let host: Weak<HostInner> = Arc::downgrade(&self.inner);
        self.inner.mcp.set_listener(Box::new(move || {
            if let Some(inner) = host.upgrade() {
                Host { inner }.refresh_mcp_tools();
            }
        }));
        // A server that changed between the first listing and now.
        self.refresh_mcp_tools();
    }

    /// Replaces the registered MCP tools with what the servers offer now.
    pub(crate) fn refresh_mcp_tools(&self) {
        let is_mcp = |tool: &crate::registry::ToolEntry| matches!(tool.source, Source::Mcp(_));
        // Read under the lock, so a refresh never applies a listing older than one another
        // refresh already applied.
        let _one_at_a_time = self.inner.reloading.lock();
        let started = Instant::now();
        let entries = self.inner.mcp.entries();
        let old = self.inner.registry.snapshot();
        if entries.is_empty() && !old.all().any(|tool| is_mcp(tool)) {
            // No MCP server offers anything and none did (the common case: none configured).
            return;
        }
        let mut state = (*old).clone();
        state.remove_where(is_mcp);
        for entry in entries {
            let name = entry.name.to_string();
            if let Err(rejection) = state.apply(vec![entry], Vec::new()) {
                tracing::warn!(target: "toolhost::mcp_client", "{name} not registered: {}", rejection.message);
            }
        }
        // Only MCP tools changed: compare just those.
        let sources = crate::discovery::Sources::default();
        let before = fingerprint(&old, &sources, is_mcp);
        let after = fingerprint(&state, &sources, is_mcp);
        if before == after {
            return;
        }
        self.inner.registry.replace(state);
        let mut event = ReloadEvent {
            duration_ms: started.elapsed().as_millis() as u64,
            ..ReloadEvent::default()
        };
        event.added = after
            .keys()
            .filter(|k| !before.contains_key(*k))
            .cloned()
            .collect();
        event.removed = before
            .keys()
            .filter(|k| !after.contains_key(*k))
            .cloned()
            .collect();
        event.changed = after
            .iter()
            .filter(|(k, v)| before.get(*k).is_some_and(|old| old != *v))
            .map(|(k, _)| k.clone())
            .collect();
        tracing::info!(target: "toolhost::load", "mcp servers: {}", event.summary());
        // Nobody listening is fine.
        let _ = self.inner.reloads.send(event);
    }

    /// Each configured MCP server: up, starting or down (with the reason), and its tool
    /// count.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn mcp_servers(&self) -> Vec<ServerStatus> {
        self.inner.mcp.statuses()
    }

    /// Problems met registering the servers' tools (name collisions, schemas that do not
    /// compile).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn mcp_problems(&self) -> Vec<String> {
        self.inner.mcp.problems()
    }
}
