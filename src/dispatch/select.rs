//! Whether a tool is in the caller's selection (its enabled and disabled toolsets, SPEC
//! §4). Resolving toolsets walks every tool, so resolved selections are kept per registry
//! generation (at most 8); callers without a selection skip all of it.

use crate::config::Config;
use crate::registry::{CallContext, RegistryState};
use crate::toolsets::{EffectiveSelection, Toolsets};
use parking_lot::Mutex;
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

const CAPACITY: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    generation: u64,
    scope: Option<String>,
    selection: EffectiveSelection,
}

/// Resolved selections, most recently used first.
#[derive(Default)]
pub(super) struct SelectionCache {
    entries: Mutex<VecDeque<(Key, Arc<HashSet<String>>)>>,
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
        let selection =
            EffectiveSelection::new(config, ctx.toolsets.as_deref(), &ctx.disabled_toolsets);
        if selection.is_everything() {
            return true;
        }
        let key = Key {
            generation: state.generation(),
            scope: ctx.scope.clone(),
            selection,
        };
        if let Some(selected) = self.lookup(&key) {
            return selected.contains(name);
        }
        let visible = state.visible(ctx.scope.as_deref());
        let toolsets = Toolsets::new(&visible, &config.toolsets);
        let selected: HashSet<String> = toolsets
            .select(key.selection.enabled.as_deref(), &key.selection.disabled)
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
