//! Effects (docs/effects.md): what a tool's handler can do to the world, read from its
//! file's `full_moon` tree and the `lib/` modules it requires; checked against the tool's
//! declared annotations at load, and used to fill in the ones it left out.
//!
//! The analysis of a file ([`scan`]) is kept per file digest in `<cache_dir>/effects.json`
//! ([`cache`]), so a warm start parses nothing it parsed before; [`resolve`] follows a
//! handler through the file's names and modules; [`check`] compares with the annotations.

mod cache;
mod check;
mod resolve;
mod scan;
mod summary;

pub(crate) use cache::Effects;
pub(crate) use check::{AnnotationCheck, apply};
pub(crate) use summary::Summary;

use serde::Serialize;
use std::sync::Arc;

/// Largest file analysed: the tree is walked recursively, and a long operator or call chain
/// (which the nesting guard lets through) makes a deep tree. A larger file's effects are
/// `unknown` (never derived read-only; the run-time guard still holds).
pub(crate) const MAX_ANALYSED_BYTES: usize = 1024 * 1024;

/// The analysis of a parsed file of `len` bytes (a file over [`MAX_ANALYSED_BYTES`]: one
/// `unknown` site).
pub(crate) fn summarise_bounded(ast: &full_moon::ast::Ast, len: usize) -> Option<Arc<Summary>> {
    if len > MAX_ANALYSED_BYTES {
        let mut summary = Summary::default();
        summary.whole.sites.insert(summary::Site {
            effect: "unknown".into(),
            call: format!("file larger than {} KiB (not analysed)", MAX_ANALYSED_BYTES / 1024),
            line: 1,
        });
        return Some(Arc::new(summary));
    }
    Some(Arc::new(scan::summarise(ast)))
}

/// One effect of a tool, with where its code has it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct EffectSite {
    /// The effect (`fs.read`, `fs.write`, `store.read`, `store.write`, `env`, `proc`,
    /// `call:NAME`, `call:*`, `mcp`, `unknown`).
    pub effect: String,
    /// What the code does there (`fs.write`, `ctx.call`, `load`, …).
    pub call: String,
    /// The file, as shown in messages.
    pub file: String,
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
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.sites.iter().map(|s| s.effect.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        names
    }
}
