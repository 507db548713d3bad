//! Whether a tool is in the caller's selection (its enabled and disabled toolsets,
//! docs/calls.md). Resolving toolsets walks every tool, so resolved selections are kept per
//! registry generation (at most 8); callers without a selection skip all of it.

use crate::config::Config;
use crate::mru::Mru;
use crate::registry::{CallContext, RegistryState, ToolsetSelection};
use crate::toolsets::{Toolsets, effective};
use std::collections::HashSet;
use std::sync::Arc;

const CAPACITY: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    generation: u64,
    scope: Option<String>,
    selection: ToolsetSelection,
}

/// Resolved selections, most recently used first.
pub(super) struct SelectionCache {
    entries: Mru<Key, Arc<HashSet<String>>>,
}

impl Default for SelectionCache {
    fn default() -> Self {
        Self {
            entries: Mru::new(CAPACITY),
        }
    }
}

impl SelectionCache {
    /// True when `name` is in the selection of `ctx` (plus the config's defaults).
    pub(super) fn contains(
        &self,
        state: &RegistryState,
        config: &Config,
        ctx: &CallContext,
        name: &str,
    ) -> bool {
        let selection = effective(config, &ctx.toolsets);
        if selection.is_everything() {
            return true;
        }
        let key = Key {
            generation: state.generation(),
            scope: ctx.scope.clone(),
            selection,
        };
        if let Some(selected) = self.entries.get(&key) {
            return selected.contains(name);
        }
        let visible = state.visible(ctx.scope.as_deref());
        let toolsets = Toolsets::new(&visible, &config.toolsets);
        let selected: HashSet<String> = toolsets
            .select(&key.selection)
            .into_iter()
            .map(str::to_string)
            .collect();
        let found = selected.contains(name);
        self.entries.insert(key, Arc::new(selected));
        found
    }
}
