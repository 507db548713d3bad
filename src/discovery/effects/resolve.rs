//! Following a handler: from its own part of the file, through the top-level names it uses
//! (transitively) and the modules those parts require with a literal name (each module's
//! whole file: what a module does at load or in any of its functions may run in the call).

use super::EffectSite;
use super::cache::Effects;
use super::lookups::DirsKey;
use super::resolved::Trail;
use super::summary::{Reach, Summary};
use crate::lua::SearchDir;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

/// Where a file's modules are looked up: its search folders, and their key (`None`: a
/// path is not UTF-8).
pub(super) type Dirs<'a> = (Option<&'a DirsKey>, &'a [SearchDir]);

/// The effect sites of tool `tool` registered by the file `shown` (analysed as `summary`);
/// modules are looked up in `dirs`, and each name followed is noted in `trail`.
pub(super) fn tool_sites(
    effects: &mut Effects,
    summary: &Summary,
    tool: &str,
    shown: &str,
    dirs: Dirs<'_>,
    trail: &mut Trail,
) -> Vec<EffectSite> {
    // A registration whose name is unclear may be this tool's.
    let start = match summary.handlers.contains_key(super::scan::UNCLEAR) {
        true => &summary.whole,
        false => summary.handlers.get(tool).unwrap_or(&summary.whole),
    };
    let reach = closure(summary, start);
    let mut sites = Vec::new();
    let mut seen_modules = HashSet::new();
    let mut walk = Walk {
        effects,
        dirs,
        trail,
        sites: &mut sites,
        seen_modules: &mut seen_modules,
    };
    walk.collect(&reach, shown);
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

/// One handler's walk through its modules.
struct Walk<'w, 'd> {
    effects: &'w mut Effects,
    dirs: Dirs<'d>,
    trail: &'w mut Trail,
    sites: &'w mut Vec<EffectSite>,
    /// Each module file once.
    seen_modules: &'w mut HashSet<PathBuf>,
}

impl Walk<'_, '_> {
    /// Adds `reach`'s sites (in `shown`) and, recursively, its modules' (each module once).
    fn collect(&mut self, reach: &Reach, shown: &str) {
        let shown: Arc<str> = shown.into();
        for site in &reach.sites {
            self.sites.push(EffectSite {
                effect: site.effect.as_str().into(),
                call: site.call.as_str().into(),
                file: shown.clone(),
                line: site.line,
            });
        }
        let modules: &BTreeMap<String, u32> = &reach.modules;
        for (module, line) in modules {
            let unknown = |why: String| EffectSite {
                effect: "unknown".into(),
                call: format!("require('{module}'): {why}").into(),
                file: shown.clone(),
                line: *line,
            };
            let (key, dirs) = self.dirs;
            let found = self.effects.find_module(key, dirs, module);
            let (path, module_shown) = match &found {
                Ok(found) => found.clone(),
                Err(e) => {
                    self.trail.note(module, &found, None);
                    self.sites.push(unknown(e.clone()));
                    continue;
                }
            };
            let (summary, digest) = self.effects.summary_of_file(&path);
            self.trail.note(module, &found, digest);
            if !self.seen_modules.insert(path) {
                continue;
            }
            match summary {
                Some(summary) => self.collect(&summary.whole, &module_shown),
                None => {
                    // Perhaps for a passing reason (a read or a thread that failed): a
                    // result resting on it is not kept.
                    self.trail.forget();
                    self.sites
                        .push(unknown("the module could not be analysed".into()));
                }
            }
        }
    }
}
