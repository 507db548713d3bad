//! The registry's contents and the collision policy of docs/calls.md.
//!
//! A [`RegistryState`] is a plain value: loading builds one, [`super::Registry`] publishes it
//! as an immutable snapshot. Registrations arrive one file at a time and are applied
//! atomically: every entry of the batch is checked against the state plus the batch's own
//! earlier entries before anything is inserted.

use super::batch::{Batch, Key};
use super::content::{PromptEntry, ResourceEntry};
use super::entry::{HookEntry, Source, ToolEntry};
use super::invalid::Invalid;
use super::uri_template::Params;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Tools and hooks, by scope, plus the generation counter.
#[derive(Debug, Clone, Default)]
pub(crate) struct RegistryState {
    global: BTreeMap<String, Arc<ToolEntry>>,
    scoped: BTreeMap<String, BTreeMap<String, Arc<ToolEntry>>>,
    hooks: Vec<Arc<HookEntry>>,
    /// Resources by URI or template text.
    resources: BTreeMap<String, Arc<ResourceEntry>>,
    /// Prompts by name.
    prompts: BTreeMap<String, Arc<PromptEntry>>,
    generation: u64,
    plugins_allowing_override: BTreeSet<String>,
}

/// Why a registration in a batch was rejected; `index` is its position in the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rejection {
    /// Position of the rejected entry in the batch.
    pub index: usize,
    /// The message of docs/calls.md.
    pub message: String,
}

/// What a successful batch did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Applied {
    /// Same-toolset replacements and other non-fatal notes.
    pub warnings: Vec<String>,
    /// Library tools left out because a tool of the same name came from elsewhere.
    pub shadowed: Vec<String>,
}

impl RegistryState {
    /// An empty registry whose plugins in `plugins_allowing_override` have the operator's
    /// opt-in (`[plugins.ID] allow_tool_override = true`).
    pub(crate) fn new(plugins_allowing_override: BTreeSet<String>) -> Self {
        Self {
            plugins_allowing_override,
            ..Self::default()
        }
    }

    /// The generation: bumped by every successful registration and deregistration.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// Makes sure the generation is at least `floor`, so that a swapped-in state never
    /// reuses a generation an old memo could have been keyed on.
    pub(crate) fn raise_generation_to(&mut self, floor: u64) {
        self.generation = self.generation.max(floor);
    }

    /// Applies one file's registrations atomically: all of them, or none (the first
    /// rejection is returned and the state is unchanged).
    pub(crate) fn apply(
        &mut self,
        tools: Vec<ToolEntry>,
        hooks: Vec<HookEntry>,
    ) -> Result<Applied, Rejection> {
        let mut staged = Batch::with_capacity(tools.len());
        let mut applied = Applied::default();
        for (index, tool) in tools.into_iter().enumerate() {
            let key: Key = (tool.scope.clone(), tool.name.as_str().to_owned());
            let existing = self.existing_for(&tool, &key, &staged);
            // The library is the fallback: loaded after the built-in directories (and the
            // native and MCP tools), its tool steps aside for one of the same name from
            // elsewhere, whatever the toolsets, without a warning (a project that copied
            // the library out with `init --with-library` shadows every library tool).
            if existing
                .as_ref()
                .is_some_and(|e| steps_aside(&tool.source, &e.source))
            {
                applied.shadowed.push(tool.name.to_string());
                continue;
            }
            if let Some(existing) = existing {
                match self.judge(&tool, &existing) {
                    Ok(Some(warning)) => applied.warnings.push(warning),
                    Ok(None) => {}
                    Err(refused) => {
                        return Err(Rejection {
                            index,
                            message: refused.into_message(),
                        });
                    }
                }
            }
            staged.insert(key, Arc::new(tool));
        }
        let count = staged.len() + hooks.len();
        for (key, entry) in staged.into_entries() {
            self.insert(key, entry);
        }
        self.hooks.extend(hooks.into_iter().map(Arc::new));
        self.generation += count as u64;
        Ok(applied)
    }

    /// Removes every tool `doomed` picks (an MCP server's tools before they are listed
    /// again); returns how many went.
    #[cfg_attr(not(feature = "mcp-client"), allow(dead_code))]
    pub(crate) fn remove_where(&mut self, doomed: impl Fn(&ToolEntry) -> bool) -> usize {
        let before = self.all().count();
        self.global.retain(|_, tool| !doomed(tool));
        for overlay in self.scoped.values_mut() {
            overlay.retain(|_, tool| !doomed(tool));
        }
        let removed = before - self.all().count();
        if removed > 0 {
            self.generation += 1;
        }
        removed
    }

    /// Removes a tool from the global registry (`scope = None`) or an overlay; true when
    /// something was removed. (Reloads build fresh states; removal is for tests.)
    #[cfg(test)]
    pub(crate) fn deregister(&mut self, name: &str, scope: Option<&str>) -> bool {
        let removed = match scope {
            None => self.global.remove(name).is_some(),
            Some(scope) => self
                .scoped
                .get_mut(scope)
                .is_some_and(|overlay| overlay.remove(name).is_some()),
        };
        if removed {
            self.generation += 1;
        }
        removed
    }

    /// The tool a caller in `scope` sees under `name`: the overlay wins over global.
    pub(crate) fn lookup(&self, name: &str, scope: Option<&str>) -> Option<&Arc<ToolEntry>> {
        scope
            .and_then(|s| self.scoped.get(s))
            .and_then(|overlay| overlay.get(name))
            .or_else(|| self.global.get(name))
    }

    /// Every tool a caller in `scope` sees, sorted by name.
    pub(crate) fn visible(&self, scope: Option<&str>) -> Vec<Arc<ToolEntry>> {
        let overlay = scope.and_then(|s| self.scoped.get(s));
        let Some(overlay) = overlay else {
            return self.global.values().cloned().collect();
        };
        let mut merged: BTreeMap<&str, &Arc<ToolEntry>> =
            self.global.iter().map(|(k, v)| (k.as_str(), v)).collect();
        merged.extend(overlay.iter().map(|(k, v)| (k.as_str(), v)));
        merged.into_values().cloned().collect()
    }

    /// Every tool in every scope: global first, then overlays by scope name.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Arc<ToolEntry>> {
        self.global
            .values()
            .chain(self.scoped.values().flat_map(|o| o.values()))
    }

    /// The registered Lua hooks, in load order.
    pub(crate) fn hooks(&self) -> &[Arc<HookEntry>] {
        &self.hooks
    }

    /// The entry `tool` (whose key is `own`) would replace: one staged by the same file,
    /// else one registered before.
    fn existing_for(&self, tool: &ToolEntry, own: &Key, staged: &Batch) -> Option<Arc<ToolEntry>> {
        if let Some(entry) = staged.get(own) {
            return Some(entry.clone());
        }
        if let Some(scope) = &tool.scope {
            if let Some(entry) = self
                .scoped
                .get(scope)
                .and_then(|o| o.get(tool.name.as_str()))
            {
                return Some(entry.clone());
            }
            let global = (None, tool.name.as_str().to_owned());
            if let Some(entry) = staged.get(&global) {
                return Some(entry.clone());
            }
        }
        self.global.get(tool.name.as_str()).cloned()
    }

    /// docs/calls.md: `Ok(Some(warning))` for a same-toolset replacement, `Err` for a rejection.
    fn judge(&self, tool: &ToolEntry, existing: &ToolEntry) -> Result<Option<String>, Invalid> {
        let name = tool.name.as_str();
        if let Source::Plugin(id) = &tool.source
            && existing.source != tool.source
            && !(tool.override_existing && self.plugins_allowing_override.contains(id))
        {
            return Err(Invalid::new(format!(
                "plugin '{id}' cannot override tool '{name}' without operator opt-in \
                 (allow_tool_override)"
            )));
        }
        // A scoped entry over a global one shadows it: that always needs `override`.
        let shadows_global = tool.scope.is_some() && existing.scope.is_none();
        let other_source = existing.source != tool.source;
        if existing.toolset != tool.toolset || shadows_global || other_source {
            if tool.override_existing {
                // The audit line of the reference registry, word for word.
                return Ok(Some(format!(
                    "overriding existing tool '{name}' (toolset '{}' from {}) with toolset \
                     '{}' from {}",
                    existing.toolset,
                    existing.origin(),
                    tool.toolset,
                    tool.origin()
                )));
            }
            return Err(Invalid::new(format!(
                "tool '{name}' (toolset '{}') would shadow existing tool from toolset '{}'; \
                 pass override = true or remove the existing tool",
                tool.toolset, existing.toolset
            )));
        }
        Ok(Some(format!(
            "tool '{name}' from {} replaces the one from {} (same toolset '{}')",
            tool.origin(),
            existing.origin(),
            tool.toolset
        )))
    }

    fn insert(&mut self, (scope, name): Key, entry: Arc<ToolEntry>) {
        match scope {
            None => self.global.insert(name, entry),
            Some(scope) => self.scoped.entry(scope).or_default().insert(name, entry),
        };
    }

    /// Whether a file's resources and prompts may join: a URI or prompt name already
    /// registered by another toolset or source is refused (with the line of the call and
    /// the message), as is one given twice by the file; the same toolset's replaces the
    /// old one (the warnings say so). A library entry steps aside, without a word, for one
    /// of the same URI or name from another source, as a library tool does
    /// ([`Self::insert_content`] leaves it out).
    pub(crate) fn judge_content(
        &self,
        resources: &[ResourceEntry],
        prompts: &[PromptEntry],
    ) -> Result<Vec<String>, (u32, String)> {
        let mut warnings = Vec::new();
        let keyed = resources
            .iter()
            .map(|r| {
                (
                    "resource",
                    r.uri.as_str(),
                    &r.info,
                    &r.origin,
                    self.resources.get(&r.uri).map(|e| (&e.info, &e.origin)),
                )
            })
            .chain(prompts.iter().map(|p| {
                (
                    "prompt",
                    p.info.name.as_str(),
                    &p.info,
                    &p.origin,
                    self.prompts.get(&p.info.name).map(|e| (&e.info, &e.origin)),
                )
            }));
        let mut seen: BTreeSet<(&str, &str)> = BTreeSet::new();
        for (kind, key, info, origin, existing) in keyed {
            if !seen.insert((kind, key)) {
                let by = match origin.place() {
                    Some(_) => "in this file",
                    None => "by the embedding program",
                };
                return Err((
                    origin.line,
                    format!("{kind}: {kind} '{key}' is registered twice {by}"),
                ));
            }
            let Some((old, old_origin)) = existing else {
                continue;
            };
            if steps_aside(&origin.source, &old_origin.source) {
                continue;
            }
            if old.toolset != info.toolset || old_origin.source != origin.source {
                return Err((
                    origin.line,
                    format!(
                        "{kind}: {kind} '{key}' (toolset '{}') would shadow the one from toolset \
                         '{}' ({old_origin}); remove one of them",
                        info.toolset, old.toolset,
                    ),
                ));
            }
            warnings.push(format!(
                "{kind} '{key}' from {origin} replaces the one from {old_origin} (same toolset '{}')",
                info.toolset
            ));
        }
        Ok(warnings)
    }

    /// Adds a file's resources and prompts (judged by [`Self::judge_content`]); a library
    /// entry whose URI or name another source already has is left out.
    pub(crate) fn insert_content(
        &mut self,
        resources: Vec<ResourceEntry>,
        prompts: Vec<PromptEntry>,
    ) {
        let mut count = 0;
        for resource in resources {
            let kept = self.resources.get(&resource.uri);
            if kept.is_some_and(|old| steps_aside(&resource.origin.source, &old.origin.source)) {
                continue;
            }
            self.resources
                .insert(resource.uri.clone(), Arc::new(resource));
            count += 1;
        }
        for prompt in prompts {
            let kept = self.prompts.get(&prompt.info.name);
            if kept.is_some_and(|old| steps_aside(&prompt.origin.source, &old.origin.source)) {
                continue;
            }
            self.prompts
                .insert(prompt.info.name.clone(), Arc::new(prompt));
            count += 1;
        }
        self.generation += count as u64;
    }

    /// Every resource, by URI or template text.
    pub(crate) fn resources(&self) -> impl Iterator<Item = &Arc<ResourceEntry>> {
        self.resources.values()
    }

    /// Every prompt, by name.
    pub(crate) fn prompts(&self) -> impl Iterator<Item = &Arc<PromptEntry>> {
        self.prompts.values()
    }

    /// The prompt called `name`.
    pub(crate) fn prompt(&self, name: &str) -> Option<&Arc<PromptEntry>> {
        self.prompts.get(name)
    }

    /// The resource serving `uri` and the template's values: a fixed URI first, then the
    /// first template (in key order) that matches.
    pub(crate) fn resource_for(&self, uri: &str) -> Option<(&Arc<ResourceEntry>, Params)> {
        if let Some(fixed) = self.resources.get(uri).filter(|r| r.template.is_none()) {
            return Some((fixed, Vec::new()));
        }
        self.resources
            .values()
            .filter(|r| r.template.is_some())
            .find_map(|r| r.serves(uri).map(|params| (r, params)))
    }
}

/// Whether a tool, resource or prompt from `new` gives way to the one from `old` with the
/// same name or URI: the library is the fallback, loaded after the tool directories, so
/// its entry steps aside for one from elsewhere (a project that copied the library out
/// with `init --with-library` serves its own copies).
fn steps_aside(new: &Source, old: &Source) -> bool {
    *new == Source::Library && *old != Source::Library
}
