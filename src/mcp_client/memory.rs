//! Each server's last tool listing, kept in the cache directory (`mcp-servers/NAME.json`)
//! with a digest of the server's section: a server that fails to start next time still has
//! its tools registered (unavailable, with the reason) instead of vanishing from `list`.
//! An unreadable, corrupt or stale file is ignored (and rewritten on the next listing).

use crate::config::McpServerConfig;
use rmcp::model::Tool;
use serde::{Deserialize, Serialize};
use std::hash::{Hash, Hasher};
use std::path::PathBuf;

/// Largest remembered listing read back.
const MAX_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Serialize, Deserialize)]
struct Remembered {
    /// Digest of the server's section and the toolhost version.
    key: String,
    tools: Vec<Tool>,
}

/// Where listings are kept.
#[derive(Clone)]
pub(super) struct Memory {
    dir: PathBuf,
}

impl Memory {
    pub(super) fn new(cache_dir: PathBuf) -> Self {
        Self {
            dir: cache_dir.join("mcp-servers"),
        }
    }

    /// The last listing of `name` under this very `config`, if any.
    pub(super) fn recall(&self, name: &str, config: &McpServerConfig) -> Option<Vec<Tool>> {
        let bytes = crate::bounded_read::read_regular(&self.file(name), MAX_BYTES).ok()?;
        let remembered: Remembered = serde_json::from_slice(&bytes).ok()?;
        (remembered.key == key(config)).then_some(remembered.tools)
    }

    /// Keeps `tools` as the listing of `name` (best effort: a cache that cannot be written
    /// only costs the memory).
    pub(super) fn remember(&self, name: &str, config: &McpServerConfig, tools: &[Tool]) {
        let remembered = Remembered {
            key: key(config),
            tools: tools.to_vec(),
        };
        let Ok(bytes) = serde_json::to_vec(&remembered) else {
            return;
        };
        let file = self.file(name);
        let temp = file.with_extension(format!("tmp{}", std::process::id()));
        let written = std::fs::create_dir_all(&self.dir)
            .and_then(|()| std::fs::write(&temp, bytes))
            .and_then(|()| std::fs::rename(&temp, &file));
        if let Err(error) = written {
            let _ = std::fs::remove_file(&temp);
            tracing::debug!(target: "toolhost::mcp_client", server = %name, "cannot remember the tool list: {error}");
        }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.json"))
    }
}

fn key(config: &McpServerConfig) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    config.hash(&mut hasher);
    format!("{}-{:016x}", env!("CARGO_PKG_VERSION"), hasher.finish())
}
