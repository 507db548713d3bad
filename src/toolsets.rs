//! Toolset composition and resolution (docs/calls.md).
//!
//! A toolset is the set of tools registered with that `toolset` name, plus config-defined
//! composites (`[toolsets.NAME] tools = [...], includes = [...]`). Resolution is recursive
//! over `includes`; a name already visited contributes nothing, so cycles and diamonds are
//! harmless. `all` and `*` mean every tool. Unknown names are warned about and skipped. The
//! selection is the union of the enabled toolsets (default: all) minus the disabled ones,
//! subtracted last whatever included them.

use crate::config::ToolsetConfig;
use crate::registry::{ToolEntry, ToolsetSelection};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

/// A caller's `selection` with the config's defaults applied, in canonical form (it keys
/// caches): its enabled toolsets, else the config's `enabled_toolsets` (`None`: all), and
/// the config's `disabled_toolsets` plus its own disabled ones.
pub(crate) fn effective(
    config: &crate::config::Config,
    selection: &ToolsetSelection,
) -> ToolsetSelection {
    let mut disabled = config.disabled_toolsets.clone().unwrap_or_default();
    disabled.extend(selection.disabled.iter().cloned());
    ToolsetSelection {
        enabled: selection
            .enabled
            .clone()
            .or_else(|| config.enabled_toolsets.clone()),
        disabled,
    }
    .into_canonical()
}

/// Names that mean "every toolset".
pub(crate) const ALL_NAMES: [&str; 2] = ["all", "*"];

/// Whether the toolset names `names` reach the toolset `toolset` (of a resource or a
/// prompt, which are not tools): one of them is `toolset` or `all`/`*`, or a
/// `[toolsets.NAME]` composite includes it, however deep. Cycles are harmless.
pub(crate) fn reaches(
    composites: &BTreeMap<String, ToolsetConfig>,
    names: &[String],
    toolset: &str,
) -> bool {
    let mut visited: HashSet<&str> = HashSet::new();
    let mut pending: Vec<&str> = names.iter().map(String::as_str).collect();
    while let Some(name) = pending.pop() {
        if !visited.insert(name) {
            continue;
        }
        if name == toolset || ALL_NAMES.contains(&name) {
            return true;
        }
        if let Some(composite) = composites.get(name) {
            pending.extend(composite.includes.iter().map(String::as_str));
        }
    }
    false
}

/// Whether `selection` (the config's defaults applied, [`effective`]) takes in the
/// resources and prompts of `toolset`: its enabled toolsets (`None`: all) reach it and its
/// disabled ones do not, as for tools.
pub(crate) fn selects_toolset(
    composites: &BTreeMap<String, ToolsetConfig>,
    selection: &ToolsetSelection,
    toolset: &str,
) -> bool {
    let enabled = match &selection.enabled {
        None => true,
        Some(names) => reaches(composites, names, toolset),
    };
    enabled && !reaches(composites, &selection.disabled, toolset)
}

/// The toolsets known for one set of visible tools.
pub(crate) struct Toolsets<'a> {
    composites: &'a BTreeMap<String, ToolsetConfig>,
    by_toolset: BTreeMap<&'a str, Vec<&'a str>>,
    every_tool: BTreeSet<&'a str>,
}

/// What a list of toolset names resolves to.
#[derive(Debug, Default, PartialEq, Eq)]
struct Expansion<'a> {
    all: bool,
    tools: BTreeSet<&'a str>,
}

impl<'a> Toolsets<'a> {
    /// Toolsets of `tools` plus the configured composites.
    pub(crate) fn new(
        tools: &'a [Arc<ToolEntry>],
        composites: &'a BTreeMap<String, ToolsetConfig>,
    ) -> Self {
        let mut by_toolset: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for tool in tools {
            by_toolset
                .entry(tool.toolset.as_str())
                .or_default()
                .push(tool.name.as_str());
        }
        Self {
            composites,
            every_tool: tools.iter().map(|t| t.name.as_str()).collect(),
            by_toolset,
        }
    }

    /// The names of the selected tools: enabled toolsets (`None`: all) minus disabled ones
    /// (the selection as given: apply the config's defaults first, with [`effective`]).
    pub(crate) fn select(&self, selection: &ToolsetSelection) -> BTreeSet<&'a str> {
        let mut selected = match &selection.enabled {
            None => self.every_tool.clone(),
            Some(names) => self.resolve(names),
        };
        if !selection.disabled.is_empty() {
            let removed = self.resolve(&selection.disabled);
            selected.retain(|name| !removed.contains(name));
        }
        selected
    }

    /// The tools a list of toolset names stands for.
    pub(crate) fn resolve(&self, names: &[String]) -> BTreeSet<&'a str> {
        let mut expansion = Expansion::default();
        let mut visited = HashSet::new();
        for name in names {
            self.expand(name, &mut visited, &mut expansion);
        }
        if expansion.all {
            self.every_tool.clone()
        } else {
            expansion.tools
        }
    }

    fn expand(&self, name: &str, visited: &mut HashSet<String>, out: &mut Expansion<'a>) {
        if !visited.insert(name.to_string()) {
            return;
        }
        if ALL_NAMES.contains(&name) {
            out.all = true;
            return;
        }
        let mut known = false;
        if let Some(tools) = self.by_toolset.get(name) {
            known = true;
            out.tools.extend(tools.iter().copied());
        }
        if let Some(composite) = self.composites.get(name) {
            known = true;
            for tool in &composite.tools {
                match self.every_tool.get(tool.as_str()) {
                    Some(found) => {
                        out.tools.insert(found);
                    }
                    None => tracing::debug!("toolset '{name}' lists unknown tool '{tool}'"),
                }
            }
            for included in &composite.includes {
                self.expand(included, visited, out);
            }
        }
        if !known {
            tracing::warn!("unknown toolset '{name}' skipped");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::test_entry;

    fn tool(name: &str, toolset: &str) -> Arc<ToolEntry> {
        Arc::new(test_entry(name, toolset))
    }

    fn composite(tools: &[&str], includes: &[&str]) -> ToolsetConfig {
        ToolsetConfig {
            description: None,
            tools: tools.iter().map(|s| s.to_string()).collect(),
            includes: includes.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn fixture() -> (Vec<Arc<ToolEntry>>, BTreeMap<String, ToolsetConfig>) {
        let tools = vec![
            tool("read", "file"),
            tool("write", "file"),
            tool("run", "shell"),
            tool("echo", "debug"),
        ];
        let mut composites = BTreeMap::new();
        composites.insert("coding".into(), composite(&["echo"], &["file", "ops"]));
        composites.insert("ops".into(), composite(&[], &["shell", "coding"])); // a cycle
        composites.insert("diamond".into(), composite(&[], &["coding", "ops", "file"]));
        (tools, composites)
    }

    fn pick(enabled: Option<&[&str]>, disabled: &[&str]) -> Vec<String> {
        let (tools, composites) = fixture();
        let sets = Toolsets::new(&tools, &composites);
        let selection = ToolsetSelection {
            enabled: enabled.map(names),
            disabled: names(disabled),
        };
        sets.select(&selection)
            .into_iter()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn a_content_toolset_follows_enabled_composites_and_disabled_names() {
        let (_, composites) = fixture();
        let pick = |enabled: Option<&[&str]>, disabled: &[&str]| ToolsetSelection {
            enabled: enabled.map(names),
            disabled: names(disabled),
        };
        assert!(selects_toolset(&composites, &pick(None, &[]), "notes"));
        assert!(selects_toolset(
            &composites,
            &pick(Some(&["notes"]), &[]),
            "notes"
        ));
        assert!(!selects_toolset(
            &composites,
            &pick(Some(&["file"]), &[]),
            "notes"
        ));
        // `coding` includes `file` (and, through `ops`, itself: a cycle).
        assert!(selects_toolset(
            &composites,
            &pick(Some(&["coding"]), &[]),
            "file"
        ));
        assert!(selects_toolset(
            &composites,
            &pick(Some(&["*"]), &[]),
            "notes"
        ));
        assert!(!selects_toolset(
            &composites,
            &pick(None, &["notes"]),
            "notes"
        ));
        assert!(!selects_toolset(
            &composites,
            &pick(Some(&["all"]), &["ops"]),
            "shell"
        ));
    }

    #[test]
    fn default_is_everything_and_all_or_star_mean_everything() {
        assert_eq!(pick(None, &[]), ["echo", "read", "run", "write"]);
        assert_eq!(pick(Some(&["all"]), &[]), ["echo", "read", "run", "write"]);
        assert_eq!(pick(Some(&["*"]), &[]), ["echo", "read", "run", "write"]);
    }

    #[test]
    fn composites_resolve_recursively_through_cycles_and_diamonds() {
        assert_eq!(
            pick(Some(&["coding"]), &[]),
            ["echo", "read", "run", "write"]
        );
        assert_eq!(
            pick(Some(&["diamond"]), &[]),
            ["echo", "read", "run", "write"]
        );
        assert_eq!(pick(Some(&["file"]), &[]), ["read", "write"]);
    }

    #[test]
    fn unknown_names_are_skipped() {
        assert_eq!(pick(Some(&["nope", "debug"]), &[]), ["echo"]);
        assert!(pick(Some(&["nope"]), &[]).is_empty());
    }

    #[test]
    fn disabled_is_subtracted_last_whatever_included_it() {
        assert_eq!(
            pick(Some(&["coding"]), &["shell"]),
            ["echo", "read", "write"]
        );
        assert_eq!(
            pick(None, &["ops"]),
            Vec::<String>::new(),
            "ops includes coding includes all"
        );
        assert_eq!(pick(Some(&["all"]), &["file", "debug"]), ["run"]);
        assert!(pick(None, &["*"]).is_empty());
    }
}
