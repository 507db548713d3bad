//! What a deferred file's top level sees of the modules of its trust domain. A warm start
//! defers a file (its registrations come from the cache) and runs it at the first use of
//! one of its functions; by then other files' top levels and handlers may have changed a
//! shared module's fields. A cold start would have run the file at its place in the load
//! order: so its run at first use sees every module as it was there — the state taken
//! when the file was deferred, or, for a module instantiated since, the state its chunk
//! returned — and the module's present state is put back right after. A skipped file's top
//! level may only name a module's function in a registration's function field
//! (`check_fn = m.open`; `discovery::contained`), so this shallow view is all it observes.

use crate::lua::sandbox::require::{self, TableState};
use mlua::{Lua, Table};
use std::sync::Arc;

/// The modules of one trust domain at one moment (table modules: their fields and
/// metatable).
#[derive(Clone, Default)]
pub(crate) struct ModuleView(Arc<Vec<(Table, TableState)>>);

impl ModuleView {
    /// The table modules of `domain` instantiated on this VM, as they are now.
    pub(crate) fn now(lua: &Lua, domain: &str) -> Self {
        let modules = require::table_modules(lua, domain)
            .into_iter()
            .filter_map(|(table, _)| TableState::of(&table).ok().map(|state| (table, state)))
            .collect();
        Self(Arc::new(modules))
    }

    /// Runs `run` with every module of `domain` as this view (or, for one instantiated
    /// since, as instantiated) has it, then puts each module's present state back.
    pub(crate) fn seen_by<R>(
        &self,
        lua: &Lua,
        domain: &str,
        run: impl FnOnce() -> R,
    ) -> mlua::Result<R> {
        let mut present = Vec::new();
        for (table, instantiated) in require::table_modules(lua, domain) {
            let seen = self
                .0
                .iter()
                .find(|(known, _)| known.to_pointer() == table.to_pointer())
                .map(|(_, state)| state.clone())
                .or(instantiated);
            let Some(seen) = seen else { continue };
            // Most often nothing changed: then nothing is touched.
            if seen.holds(&table)? {
                continue;
            }
            present.push((table.clone(), TableState::of(&table)?));
            seen.apply(&table)?;
        }
        let result = run();
        for (table, state) in present {
            state.apply(&table)?;
        }
        Ok(result)
    }
}
