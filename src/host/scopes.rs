//! `[serve.oauth.scopes]`: which OAuth scopes a call of a tool needs. An entry names a tool,
//! a toolset (a tool toolset or a `[toolsets.NAME]` composite), or `all`/`*`; a call needs
//! the scope of every entry that covers its tool, so a narrower entry never lifts a wider
//! one's requirement.

use super::Host;
use crate::registry::CallContext;
use crate::toolsets::{ALL_NAMES, Toolsets};
use std::collections::BTreeSet;

impl Host {
    /// The scopes a call of the tool `name` (as seen from the scope overlay `scope`) needs,
    /// sorted; empty when `[serve.oauth.scopes]` names none for it.
    pub(crate) fn required_scopes(&self, name: &str, scope: Option<&str>) -> Vec<String> {
        let (world, state) = self.current();
        let config = &world.config.config;
        let Some(table) = config.serve.oauth.as_ref().map(|o| &o.scopes) else {
            return Vec::new();
        };
        if table.is_empty() || state.lookup(name, scope).is_none() {
            return Vec::new();
        }
        let visible = state.visible(scope);
        let toolsets = Toolsets::new(&visible, &config.toolsets);
        // Only toolset names are resolved (resolving a tool's name would warn of an unknown
        // toolset on every call).
        let toolset_names: BTreeSet<&str> = visible
            .iter()
            .map(|tool| tool.toolset.as_str())
            .chain(config.toolsets.keys().map(String::as_str))
            .collect();
        let needed: BTreeSet<&String> = table
            .iter()
            .filter(|(target, _)| {
                target.as_str() == name
                    || ALL_NAMES.contains(&target.as_str())
                    || (toolset_names.contains(target.as_str())
                        && toolsets
                            .resolve(std::slice::from_ref(*target))
                            .contains(name))
            })
            .map(|(_, needed)| needed)
            .collect();
        needed.into_iter().cloned().collect()
    }

    /// The first scope the caller of `ctx` lacks for calling `name` (only OAuth callers
    /// have scopes to lack).
    pub(crate) fn missing_scope(&self, name: &str, ctx: &CallContext) -> Option<String> {
        ctx.caller.scopes()?;
        self.required_scopes(name, ctx.scope.as_deref())
            .into_iter()
            .find(|scope| !ctx.caller.may_use(scope))
    }

    /// The keys of `[serve.oauth.scopes]` that name no tool, resource, prompt, toolset or
    /// composite: a typo there would leave one unprotected, so the server refuses to start.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn unknown_scope_targets(&self) -> Vec<String> {
        let (world, state) = self.current();
        let config = &world.config.config;
        let Some(table) = config.serve.oauth.as_ref().map(|o| &o.scopes) else {
            return Vec::new();
        };
        let known: BTreeSet<&str> = state
            .all()
            .flat_map(|tool| [tool.name.as_str(), tool.toolset.as_str()])
            // Resources and prompts are named by toolset, name and URI (or template).
            .chain(state.resources().flat_map(|r| {
                [
                    r.uri.as_str(),
                    r.info.name.as_str(),
                    r.info.toolset.as_str(),
                ]
            }))
            .chain(
                state
                    .prompts()
                    .flat_map(|p| [p.info.name.as_str(), p.info.toolset.as_str()]),
            )
            .chain(config.toolsets.keys().map(String::as_str))
            .chain(ALL_NAMES)
            .collect();
        table
            .keys()
            .filter(|target| !known.contains(target.as_str()))
            .cloned()
            .collect()
    }

    /// Whether `[serve.oauth.scopes]` names any scope (else no call needs one).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn has_scope_table(&self) -> bool {
        let config = self.config();
        config
            .config
            .serve
            .oauth
            .as_ref()
            .is_some_and(|o| !o.scopes.is_empty())
    }

    /// Every scope `[serve.oauth.scopes]` names, sorted (the metadata's
    /// `scopes_supported`).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn configured_scopes(&self) -> Vec<String> {
        let config = self.config();
        let scopes: BTreeSet<String> = config
            .config
            .serve
            .oauth
            .iter()
            .flat_map(|o| o.scopes.values().cloned())
            .collect();
        scopes.into_iter().collect()
    }
}
