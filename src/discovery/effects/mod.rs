//! Effects (docs/effects.md): what a tool's handler can do to the world, read from its
//! file's `full_moon` tree and the `lib/` modules it requires; checked against the tool's
//! declared annotations at load, and used to fill in the ones it left out.
//!
//! The analysis of a file ([`scan`]) is kept per file digest in `<cache_dir>/effects.json`
//! ([`cache`], [`stored`]), so a warm start parses nothing it parsed before; [`resolve`]
//! follows a handler through the file's names and modules, and its result is kept too
//! ([`resolved`]), so a warm start resolves nothing it resolved before once it has checked
//! the modules it followed ([`lookups`]); the cache is read in one pass ([`json`]), its
//! resolved entries typed ([`known`]); [`check`] compares with the annotations.

mod cache;
mod check;
mod digest;
mod known;
mod lookups;
mod resolve;
mod resolved;
mod scan;
mod spans;
mod stored;
mod summary;
mod text;

pub(crate) use cache::Effects;
pub(crate) use check::{AnnotationCheck, apply};
pub(crate) use digest::Digest;
pub(crate) use summary::Summary;

pub(crate) use crate::registry::{EffectSite, ToolEffects};
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
            call: format!(
                "file larger than {} KiB (not analysed)",
                MAX_ANALYSED_BYTES / 1024
            ),
            line: 1,
        });
        return Some(Arc::new(summary));
    }
    Some(Arc::new(scan::summarise(ast)))
}

/// Finds the effects of each of a file's tools (`entries`, registered at `lines`, from
/// `source`), checks their annotations against them and fills in the ones left out.
/// `Err`: a contradiction, under `annotation_check = "error"`.
pub(crate) fn judge_file(
    effects: &mut Effects,
    entries: &mut [crate::registry::ToolEntry],
    lines: &[u32],
    verdict: &super::Verdict,
    source: &[u8],
    dirs: &[crate::lua::SearchDir],
    state: &crate::registry::RegistryState,
) -> Result<(), crate::error::LoadError> {
    let sites = tool_sites(effects, entries, verdict, source, dirs);
    for ((position, entry), sites) in entries.iter_mut().enumerate().zip(sites) {
        let sites = with_mcp(sites, state);
        let line = lines.get(position).copied();
        let derived = match apply(
            entry.name.as_str(),
            &mut entry.registration.annotations,
            &sites,
        ) {
            Ok(derived) => derived,
            Err(contradictions) => {
                let message = contradictions.join("; ");
                if effects.mode == AnnotationCheck::Error {
                    return Err(crate::error::LoadError::new(&verdict.shown, line, message));
                }
                tracing::warn!(target: "toolhost::load", "{}:{}: {message}", verdict.shown, line.unwrap_or(0));
                false
            }
        };
        entry.effects = Some(Arc::new(ToolEffects { sites, derived }));
    }
    Ok(())
}

/// The sites of each of `entries` (in order): the cached ones when everything they were
/// resolved from still holds, else resolved now (and kept for the next start).
fn tool_sites(
    effects: &mut Effects,
    entries: &[crate::registry::ToolEntry],
    verdict: &super::Verdict,
    source: &[u8],
    dirs: &[crate::lua::SearchDir],
) -> Vec<Vec<EffectSite>> {
    let names: Vec<&str> = entries.iter().map(|entry| entry.name.as_str()).collect();
    let digest = verdict.digest_of(source);
    let file = (digest, verdict.shown.as_str());
    let dirs_key = effects.dirs_key(dirs);
    if let Some(dirs_key) = &dirs_key
        && let Some(sites) = effects.resolved_sites(file, (dirs_key, dirs), &names)
    {
        return sites;
    }
    // The tree discovery parsed is this source's unless the last good version runs.
    let parsed = verdict
        .top_level
        .as_ref()
        .and_then(|top| top.effects.as_ref())
        .filter(|_| verdict.source.as_deref() == Some(source));
    let Some(summary) = effects.summary(digest, source, parsed) else {
        let unknown = EffectSite {
            effect: "unknown".into(),
            call: "the file could not be analysed".into(),
            file: verdict.shown.as_str().into(),
            line: 1,
        };
        return names.iter().map(|_| vec![unknown.clone()]).collect();
    };
    let mut trail = resolved::Trail::recording();
    let sites: Vec<Vec<EffectSite>> = names
        .iter()
        .map(|name| {
            let dirs = (dirs_key.as_ref(), dirs);
            resolve::tool_sites(effects, &summary, name, &verdict.shown, dirs, &mut trail)
        })
        .collect();
    if let Some(dirs_key) = &dirs_key {
        let tools: Vec<(&str, &[EffectSite])> = names
            .iter()
            .zip(&sites)
            .map(|(name, sites)| (*name, &sites[..]))
            .collect();
        effects.keep_resolved(file, dirs_key, trail, &tools);
    }
    sites
}

/// `sites` plus an `mcp` site beside each literal `ctx.call` of an external MCP server's
/// tool (those are registered before any Lua file).
fn with_mcp(mut sites: Vec<EffectSite>, state: &crate::registry::RegistryState) -> Vec<EffectSite> {
    let external: Vec<EffectSite> = sites
        .iter()
        .filter(|site| {
            site.effect.strip_prefix("call:").is_some_and(|name| {
                state.all().any(|tool| {
                    tool.name.as_str() == name
                        && matches!(tool.source, crate::registry::Source::Mcp(_))
                })
            })
        })
        .map(|site| EffectSite {
            effect: "mcp".into(),
            ..site.clone()
        })
        .collect();
    if !external.is_empty() {
        sites.extend(external);
        sites.sort();
        sites.dedup();
    }
    sites
}
