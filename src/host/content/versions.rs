//! When a resource was updated: a reload of the file that defines it (its source changed)
//! or a change of what it lists as is an update of the URIs it serves
//! (`notifications/resources/updated`, docs/mcp-server.md). The MCP server compares these
//! versions across reloads.

use super::Host;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

impl Host {
    /// Each resource's key (its URI or template text, as registered) and its version: a
    /// hash of the source of the file that registered it and of what it lists as.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn resource_versions(&self) -> BTreeMap<String, u64> {
        let (_, state) = self.current();
        let sources = self.inner.last_good.lock();
        state
            .resources()
            .map(|entry| {
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                sources
                    .get(entry.origin.file.as_os_str())
                    .map(|source| &source[..])
                    .hash(&mut hasher);
                let info = &entry.info;
                (&info.name, &info.title, &info.description, &info.toolset).hash(&mut hasher);
                entry.mime_type.hash(&mut hasher);
                entry
                    .annotations
                    .as_ref()
                    .map(|a| a.to_string())
                    .hash(&mut hasher);
                (entry.uri.clone(), hasher.finish())
            })
            .collect()
    }
}
