//! What the analysis keeps of one Lua file (cached by the file's digest): the effect sites
//! of each part of it, and the names and modules each part reaches.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Where a tool's code may touch the world: a host function (or a construct the analysis
/// cannot follow) at a line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub(crate) struct Site {
    /// The effect, in the names of docs/effects.md (`fs.write`, `call:NAME`, `unknown`, …).
    pub effect: String,
    /// What the code does there (`fs.write`, `ctx.call`, `load`, `fs[...]`, …).
    pub call: String,
    /// The line.
    pub line: u32,
}

/// What one part of a file (its whole text, a top-level name's definitions, a tool's
/// handler) does itself and reaches.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Reach {
    /// Its effect sites.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub sites: BTreeSet<Site>,
    /// The names it uses (its calls of the file's own functions among them).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub names: BTreeSet<String>,
    /// The modules it requires with a literal name, with the line of the first `require`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub modules: BTreeMap<String, u32>,
}

/// The analysis of one file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Summary {
    /// The whole file (a module's effects; a tool whose handler was not found).
    pub whole: Reach,
    /// What is assigned to each name at the top level (its local functions, tables of
    /// functions, aliases).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub bindings: BTreeMap<String, Reach>,
    /// What code inside functions assigns to a name that is not local to it (a global
    /// defined by a function, a field of a module-level table it replaces).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inner: BTreeMap<String, Reach>,
    /// Each `registry.register{ name = "LIT", handler = ... }`'s handler, by tool name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub handlers: BTreeMap<String, Reach>,
}
