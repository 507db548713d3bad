//! What a tool's code can do to the world (docs/effects.md), as the analysis of its Lua file
//! found it: kept on its registry entry for `list --json`, `discover --json` and
//! `toolhost explain`.

use serde::Serialize;
use std::sync::Arc;

/// One effect of a tool, with where its code has it. The texts are shared: a module's
/// sites appear in every tool that requires it, and a warm start builds each text once per
/// file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct EffectSite {
    /// The effect (`fs.read`, `fs.write`, `store.read`, `store.write`, `env`, `proc`,
    /// `call:NAME`, `call:*`, `mcp`, `unknown`).
    pub effect: Arc<str>,
    /// What the code does there (`fs.write`, `ctx.call`, `load`, …).
    pub call: Arc<str>,
    /// The file, as shown in messages.
    pub file: Arc<str>,
    /// The line.
    pub line: u32,
}

/// What the analysis found for one tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolEffects {
    /// Every site, in file and line order.
    pub sites: Vec<EffectSite>,
    /// The host filled in annotations the tool left out.
    pub derived: bool,
}

impl ToolEffects {
    /// The distinct effects, sorted (what `list --json` shows).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.sites.iter().map(|s| &*s.effect).collect();
        names.sort_unstable();
        names.dedup();
        names
    }
}
