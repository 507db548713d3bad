//! Deciding whether a file that ran at start-up may be skipped on the next warm start: its
//! top level and the top level of every module it requires there must be contained (see
//! `contained`). A verdict parsed by this discovery carries its analysis; a cached verdict
//! and every module are parsed here, on a large-stack thread like every parse.

use super::contained::{self, TopLevel};
use super::{PARSER_STACK_BYTES, Verdict};
use crate::lua::{SearchDir, depth, resolve_module};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Module verdicts of one load, by canonical path (`None` while being decided: a require
/// cycle is not contained).
#[derive(Default)]
pub(crate) struct Modules(HashMap<PathBuf, Option<bool>>);

/// Whether `verdict`'s file (which ran) is contained, modules included.
pub(crate) fn is_contained(verdict: &Verdict, search: &[SearchDir], modules: &mut Modules) -> bool {
    let top_level = match &verdict.top_level {
        Some(top_level) => top_level.clone(),
        None => match verdict.source.as_deref().and_then(analyse_text) {
            Some(top_level) => Arc::new(top_level),
            None => return false,
        },
    };
    if let Some(effect) = &top_level.effect {
        tracing::debug!(
            "{} runs at every start: its top level {effect}",
            verdict.shown
        );
        return false;
    }
    top_level
        .modules
        .iter()
        .all(|name| module_is_contained(name, search, modules))
}

fn module_is_contained(name: &str, search: &[SearchDir], modules: &mut Modules) -> bool {
    let Ok((path, _)) = resolve_module(search, name) else {
        return false;
    };
    match modules.0.get(&path) {
        Some(Some(known)) => return *known,
        Some(None) => return false,
        None => {}
    }
    modules.0.insert(path.clone(), None);
    let contained = crate::bounded_read::read_regular(&path, super::MAX_FILE_BYTES)
        .ok()
        .and_then(|bytes| analyse_text(&bytes))
        .is_some_and(|top_level| {
            // A module is instantiated whenever it is first required: its top level may not
            // read another module's fields (they could have changed by then).
            top_level.effect.is_none()
                && !top_level.reads_modules
                && top_level
                    .modules
                    .iter()
                    .all(|name| module_is_contained(name, search, modules))
        });
    modules.0.insert(path, Some(contained));
    contained
}

/// Parses `bytes` and analyses its top level; `None` when it does not parse (safely).
fn analyse_text(bytes: &[u8]) -> Option<TopLevel> {
    let text = crate::lua::strip_bom_str(std::str::from_utf8(bytes).ok()?);
    if depth::prescan(bytes, depth::MAX_NESTING).is_some() {
        return None;
    }
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("toolhost-parse".into())
            .stack_size(PARSER_STACK_BYTES)
            .spawn_scoped(scope, || {
                std::panic::catch_unwind(|| {
                    let ast = full_moon::parse_fallible(text, full_moon::LuaVersion::lua54())
                        .into_result()
                        .ok()?;
                    Some(contained::analyse_sized(&ast, text.len()))
                })
                .ok()
                .flatten()
            })
            .ok()?
            .join()
            .ok()
            .flatten()
    })
}
