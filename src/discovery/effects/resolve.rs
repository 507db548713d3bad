//! Following a handler: from its own part of the file, through the top-level names it uses
//! (transitively) and the modules those parts require with a literal name (each module's
//! whole file: what a module does at load or in any of its functions may run in the call).

use super::EffectSite;
use super::cache::Effects;
use super::summary::{Reach, Summary};
use crate::lua::{SearchDir, resolve_module};
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

/// The effect sites of tool `tool` registered by the file `shown` (analysed as `summary`);
/// modules are looked up in `dirs`.
pub(super) fn tool_sites(
    effects: &mut Effects,
    summary: &Summary,
    tool: &str,
    shown: &str,
    dirs: &[SearchDir],
) -> Vec<EffectSite> {
    // A registration whose name is unclear may be this tool's.
    let start = match summary.handlers.contains_key(super::scan::UNCLEAR) {
        true => &summary.whole,
        false => summary.handlers.get(tool).unwrap_or(&summary.whole),
    };
    let reach = closure(summary, start);
    let mut sites = Vec::new();
    let mut seen_modules = HashSet::new();
    collect(effects, &reach, shown, dirs, &mut sites, &mut seen_modules);
    sites.sort();
    sites.dedup();
    sites
}

/// `start` plus everything bound to the names it uses, transitively (each name once).
fn closure(summary: &Summary, start: &Reach) -> Reach {
    let mut reach = start.clone();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut queue: Vec<&str> = start.names.iter().map(String::as_str).collect();
    while let Some(name) = queue.pop() {
        if !seen.insert(name) {
            continue;
        }
        // What a function assigns to a global counts even when the top level never
        // binds it (`function setup() function helper() ... end end`).
        let parts = summary
            .bindings
            .get(name)
            .into_iter()
            .chain(summary.inner.get(name));
        for part in parts {
            reach.sites.extend(part.sites.iter().cloned());
            for (module, line) in &part.modules {
                reach.modules.entry(module.clone()).or_insert(*line);
            }
            queue.extend(part.names.iter().map(String::as_str));
        }
    }
    reach
}

/// Adds `reach`'s sites (in `shown`) and, recursively, its modules' (each module once).
fn collect(
    effects: &mut Effects,
    reach: &Reach,
    shown: &str,
    dirs: &[SearchDir],
    sites: &mut Vec<EffectSite>,
    seen_modules: &mut HashSet<PathBuf>,
) {
    for site in &reach.sites {
        sites.push(EffectSite {
            effect: site.effect.clone(),
            call: site.call.clone(),
            file: shown.to_string(),
            line: site.line,
        });
    }
    let modules: &BTreeMap<String, u32> = &reach.modules;
    for (module, line) in modules {
        let unknown = |why: String| EffectSite {
            effect: "unknown".into(),
            call: format!("require('{module}'): {why}"),
            file: shown.to_string(),
            line: *line,
        };
        let (path, module_shown) = match resolve_module(dirs, module) {
            Ok(found) => found,
            Err(e) => {
                sites.push(unknown(e.to_string()));
                continue;
            }
        };
        if !seen_modules.insert(path.clone()) {
            continue;
        }
        let summary: Option<Arc<Summary>> = effects.summary_of_file(&path);
        match summary {
            Some(summary) => {
                let whole = summary.whole.clone();
                collect(effects, &whole, &module_shown, dirs, sites, seen_modules);
            }
            None => sites.push(unknown("the module could not be analysed".into())),
        }
    }
}
