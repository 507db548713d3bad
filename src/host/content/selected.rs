//! Which resources and prompts a caller may see: those of the toolsets its selection takes
//! in (`serve --toolsets`, `enabled_toolsets`, …: a resource outside it is neither listed
//! nor readable), and the OAuth scopes `[serve.oauth.scopes]` asks of them (by toolset,
//! name or URI, the way it does of tools).

use super::Host;
use crate::registry::CallContext;
use crate::toolsets::{ALL_NAMES, effective, reaches, selects_toolset};
use std::collections::BTreeSet;

impl Host {
    /// Whether the resources and prompts of `toolset` are in the selection of `ctx` (with
    /// the config's `enabled_toolsets` / `disabled_toolsets` applied).
    pub(crate) fn content_selected(&self, toolset: &str, ctx: &CallContext) -> bool {
        let config = self.config();
        let config = &config.config;
        let selection = effective(config, &ctx.toolsets);
        selection.is_everything() || selects_toolset(&config.toolsets, &selection, toolset)
    }

    /// The scopes reading a resource or rendering a prompt of `toolset` needs, sorted: every
    /// `[serve.oauth.scopes]` entry that names one of `names` (its name, its URI or
    /// template), its toolset (or a composite reaching it) or `all`.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn content_scopes(&self, toolset: &str, names: &[&str]) -> Vec<String> {
        let config = self.config();
        let config = &config.config;
        let Some(table) = config.serve.oauth.as_ref().map(|o| &o.scopes) else {
            return Vec::new();
        };
        let needed: BTreeSet<&String> = table
            .iter()
            .filter(|(target, _)| {
                names.contains(&target.as_str())
                    || ALL_NAMES.contains(&target.as_str())
                    || reaches(&config.toolsets, std::slice::from_ref(*target), toolset)
            })
            .map(|(_, scope)| scope)
            .collect();
        needed.into_iter().cloned().collect()
    }

    /// The first scope the caller of `ctx` lacks for a resource or prompt of `toolset`
    /// called `names` (only OAuth callers have scopes to lack).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn content_missing_scope(
        &self,
        toolset: &str,
        names: &[&str],
        ctx: &CallContext,
    ) -> Option<String> {
        ctx.caller.scopes()?;
        self.content_scopes(toolset, names)
            .into_iter()
            .find(|scope| !ctx.caller.may_use(scope))
    }

    /// The resource serving `uri` (a fixed URI, or the first template matching it): its
    /// key (the URI or template text as registered), name and toolset.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn resource_serving(&self, uri: &str) -> Option<(String, String, String)> {
        let (_, state) = self.current();
        let (entry, _) = state.resource_for(uri)?;
        Some((
            entry.uri.clone(),
            entry.info.name.clone(),
            entry.info.toolset.clone(),
        ))
    }
}
