//! Whether a tool is in the caller's selection (its enabled and disabled toolsets, SPEC
//! §4). Resolving toolsets walks every tool, so resolved selections are kept per registry
//! generation (at most 8); callers without a selection skip all of it.

use crate::config::Config;
use crate::registry::{CallContext, RegistryState};
use crate::toolsets::Toolsets;
use parking_lot::Mutex;
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

const CAPACITY: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    generation: u64,
    scope: Option<String>,
    enabled: Option<Vec<String>>,
    disabled: Vec<String>,
}

/// Resolved selections, most recently used first.
#[derive(Default)]
pub struct SelectionCache {
    entries: Mutex<VecDeque<(Key, Arc<HashSet<String>>)>>,
}

fn sorted(names: &[String]) -> Vec<String> {
    let mut names = names.to_vec();
    names.sort();
    names.dedup();
    names
}

impl SelectionCache {
    /// True when `name` is in the selection of `ctx` (plus the config's defaults).
    pub fn contains(
        &self,
        state: &RegistryState,
        config: &Config,
        ctx: &CallContext,
        name: &str,
    ) -> bool {
        let enabled = ctx
            .toolsets
            .as_deref()
            .or(config.enabled_toolsets.as_deref());
        let config_disabled = config.disabled_toolsets.as_deref().unwrap_or_default();
        if enabled.is_none() && config_disabled.is_empty() && ctx.disabled_toolsets.is_empty() {
            return true;
        }
        let mut disabled = config_disabled.to_vec();
        disabled.extend(ctx.disabled_toolsets.iter().cloned());
        let key = Key {
            generation: state.generation(),
            scope: ctx.scope.clone(),
            enabled: enabled.map(sorted),
            disabled: sorted(&disabled),
        };
        if let Some(selected) = self.lookup(&key) {
            return selected.contains(name);
        }
        let visible = state.visible(ctx.scope.as_deref());
        let toolsets = Toolsets::new(&visible, &config.toolsets);
        let selected: HashSet<String> = toolsets
            .select(key.enabled.as_deref(), &key.disabled)
            .into_iter()
            .map(str::to_string)
            .collect();
        let found = selected.contains(name);
        let mut entries = self.entries.lock();
        entries.push_front((key, Arc::new(selected)));
        entries.truncate(CAPACITY);
        found
    }

    fn lookup(&self, key: &Key) -> Option<Arc<HashSet<String>>> {
        let mut entries = self.entries.lock();
        let position = entries.iter().position(|(k, _)| k == key)?;
        let entry = entries.remove(position)?;
        let selected = entry.1.clone();
        entries.push_front(entry);
        Some(selected)
    }
}
