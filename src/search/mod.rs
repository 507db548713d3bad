//! Tool search (docs/tool-search.md): with many tools, the non-core ones are *deferred* — left out
//! of the definitions — and three bridge tools let the model find, inspect and call them.
//! A plan (which tools are deferred, and their BM25 index) is built once per selection and
//! registry generation and reused.

mod index;

pub(crate) use index::Index;

use crate::config::{Config, ToolSearchMode};
use crate::mru::Mru;
use crate::registry::{RegistryState, ToolEntry, ToolsetSelection};
use crate::toolsets::{Toolsets, effective};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

/// The bridge tools, in the order they are appended to the definitions.
pub(crate) const BRIDGE_TOOLS: [&str; 3] = ["tool_search", "tool_describe", "tool_call"];
/// `auto` activates search above this many selected tools.
pub(crate) const DEFAULT_AUTO_THRESHOLD: usize = 40;
/// Most queries per `tool_search` call.
pub(crate) const MAX_QUERIES: usize = 7;
/// Most names per `tool_describe` call.
pub(crate) const MAX_DESCRIBE: usize = 10;
/// Default and largest `limit` of `tool_search`.
pub(crate) const DEFAULT_LIMIT: usize = 5;
/// Largest `limit` of `tool_search`.
pub(crate) const MAX_LIMIT: usize = 20;
/// Most plans kept (one per selection in use).
const CAPACITY: usize = 8;

/// Which tools a selection defers, and how to find them.
pub(crate) struct SearchPlan {
    /// Search is on for this selection.
    pub active: bool,
    /// Names of the deferred tools.
    pub deferred: HashSet<String>,
    /// The deferred tools' index.
    pub index: Index,
    /// The deferred tools by name.
    pub tools: BTreeMap<String, Arc<ToolEntry>>,
}

impl SearchPlan {
    /// The three bridge tools' function schemas (`description`, `parameters`).
    /// `available` are the selected tools available right now: the summary counts only
    /// those of the deferred ones, so it never advertises a toolset whose tools are all
    /// unavailable.
    pub(crate) fn bridge_schemas(
        &self,
        available: &[Arc<ToolEntry>],
    ) -> [(&'static str, Value); 3] {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for tool in available
            .iter()
            .filter(|t| self.deferred.contains(t.name.as_str()))
        {
            *counts.entry(tool.toolset.as_str()).or_default() += 1;
        }
        let sets: Vec<String> = counts
            .iter()
            .map(|(name, count)| format!("{name} ({count})"))
            .collect();
        let summary = format!(
            "{} more tools are available but not listed, in toolsets: {}.",
            counts.values().sum::<usize>(),
            sets.join(", ")
        );
        [
            (
                "tool_search",
                json!({
                    "description": format!("{summary} Search them by what you need; returns matching tool names with descriptions. Then use tool_describe for parameters and tool_call to run one."),
                    "parameters": {"type": "object", "properties": {
                        "queries": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_QUERIES,
                                    "description": "Up to 7 short searches, e.g. [\"read file\", \"list directory\"]"},
                        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                                  "description": "Matches per query (default 5)"}},
                        "required": ["queries"]}
                }),
            ),
            (
                "tool_describe",
                json!({
                    "description": "Parameters and description of up to 10 unlisted tools, by name (names come from tool_search).",
                    "parameters": {"type": "object", "properties": {
                        "names": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_DESCRIBE}},
                        "required": ["names"]}
                }),
            ),
            (
                "tool_call",
                // Strict-mode friendly (OpenAI strict function calling): every property
                // required, no open object; the arguments travel as JSON text (an object is
                // accepted too).
                json!({
                    "description": "Calls one unlisted tool: {name, arguments}. Listed tools are called directly, not through this.",
                    "parameters": {"type": "object", "properties": {
                        "name": {"type": "string", "description": "The tool, as tool_search named it"},
                        "arguments": {"type": ["string", "null"], "description": "Its arguments as JSON object text, e.g. {\"path\": \"a.txt\"}; null for none"}},
                        "required": ["name", "arguments"],
                        "additionalProperties": false}
                }),
            ),
        ]
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    generation: u64,
    scope: Option<String>,
    selection: ToolsetSelection,
    config: Option<(u128, u64)>,
}

/// Plans per selection, most recently used first.
pub(crate) struct SearchPlans {
    entries: Mru<Key, Arc<SearchPlan>>,
}

impl Default for SearchPlans {
    fn default() -> Self {
        Self {
            entries: Mru::new(CAPACITY),
        }
    }
}

impl SearchPlans {
    /// The plan for a selection (`toolsets` as the caller gave them; the config's defaults
    /// are applied here).
    pub(crate) fn plan(
        &self,
        state: &RegistryState,
        config: &Config,
        config_fingerprint: Option<(u128, u64)>,
        scope: Option<&str>,
        toolsets: &ToolsetSelection,
    ) -> Arc<SearchPlan> {
        let key = Key {
            generation: state.generation(),
            scope: scope.map(str::to_string),
            selection: effective(config, toolsets),
            config: config_fingerprint,
        };
        if let Some(plan) = self.entries.get(&key) {
            return plan;
        }
        let plan = Arc::new(build(state, config, &key));
        self.entries.insert(key, plan.clone());
        plan
    }
}

fn build(state: &RegistryState, config: &Config, key: &Key) -> SearchPlan {
    let visible = state.visible(key.scope.as_deref());
    let toolsets = Toolsets::new(&visible, &config.toolsets);
    let selected = toolsets.select(&key.selection);
    let settings = &config.tool_search;
    let threshold = settings.auto_threshold.unwrap_or(DEFAULT_AUTO_THRESHOLD);
    let active = match settings.enabled.unwrap_or_default() {
        ToolSearchMode::On => true,
        ToolSearchMode::Off => false,
        ToolSearchMode::Auto => selected.len() > threshold,
    };
    // `core` lists tool names and toolset names.
    let (names, sets): (Vec<String>, Vec<String>) = settings
        .core
        .iter()
        .cloned()
        .partition(|entry| visible.iter().any(|t| t.name.as_str() == entry));
    let mut core: HashSet<String> = toolsets
        .resolve(&sets)
        .into_iter()
        .map(str::to_string)
        .collect();
    core.extend(names);
    let deferred_tools: Vec<Arc<ToolEntry>> = match active {
        false => Vec::new(),
        true => visible
            .iter()
            .filter(|t| selected.contains(t.name.as_str()) && !core.contains(t.name.as_str()))
            .cloned()
            .collect(),
    };
    SearchPlan {
        active,
        deferred: deferred_tools.iter().map(|t| t.name.to_string()).collect(),
        index: Index::new(&deferred_tools),
        tools: deferred_tools
            .iter()
            .map(|t| (t.name.to_string(), t.clone()))
            .collect(),
    }
}
