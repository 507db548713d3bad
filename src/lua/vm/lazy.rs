//! Tool files run at their first use. A warm start takes a file's registrations from the
//! registration cache instead of running it (running every file was nearly all of start-up);
//! each VM runs such a file the first time one of its functions (handler, `check_fn`,
//! `dynamic_schema_overrides`) is needed, under the same sandbox and deadline as a load at
//! start-up. The run must register what the cache said (in any order: `pairs` order differs
//! between Lua states); otherwise its tools fail with a message saying so, and the cache
//! entry is dropped so that the next start runs the file.

use super::module_view::ModuleView;
use super::{FileSpec, LuaVm};
use crate::error::LoadError;
use crate::lua::call::clock;
use crate::lua::register::record::Expected;
use crate::lua::sandbox::require::SearchDir;
use crate::registry::{FnRole, LuaFnId};
use mlua::Function;
use std::path::PathBuf;
use std::sync::Arc;

/// A registering file whose registrations came from the cache, waiting for its first use.
#[derive(Debug)]
pub(crate) struct LazyFile {
    /// The file as shown to operators.
    pub display: String,
    /// The chunk name (model-facing path).
    pub chunk_name: String,
    /// Its index in the load order.
    pub index: u32,
    /// Its trust domain.
    pub domain: Arc<str>,
    /// Where `require` looks.
    pub search_dirs: Arc<[SearchDir]>,
    /// Host-API tables granted (`None`: all).
    pub capabilities: Option<Vec<String>>,
    /// How to grant a missing capability.
    pub capability_hint: Option<String>,
    /// The source the cache entry was made from (read at discovery).
    pub source: Arc<[u8]>,
    /// What it registered, in order: ordinal `i`'s functions get ids `(index, i, role)`.
    pub expected: Arc<[Expected]>,
    /// Per registration, the id of the earlier `check_fn` it shares (see
    /// `ToolRecord::check_fn_of`), resolved to this load's positions.
    pub shared_checks: Vec<Option<LuaFnId>>,
    /// The cache file to remove when the file registers something else.
    pub cache_file: Option<PathBuf>,
}

impl LazyFile {
    fn spec(&self) -> FileSpec<'_> {
        FileSpec {
            display: &self.display,
            chunk_name: &self.chunk_name,
            index: self.index,
            domain: self.domain.clone(),
            search_dirs: self.search_dirs.clone(),
            capabilities: self.capabilities.as_deref(),
            capability_hint: self.capability_hint.as_deref(),
        }
    }
}

/// A deferred file on one VM.
pub(super) enum Pending {
    /// Not run yet; the modules of its trust domain as they were when it was deferred.
    Waiting(Arc<LazyFile>, ModuleView),
    /// Ran and failed (or registered something else): every use gets this error.
    Failed(DeferredFailed),
}

/// Why a deferred file's functions are not there; its `Display` is what every use of
/// them reports.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum DeferredFailed {
    /// The file failed when it ran at first use.
    #[error("{0} (running the file at first use)")]
    Load(LoadError),
    /// The file (as shown) registered something other than the cache recorded.
    #[error(
        "{0} registered differently when it ran at first use than the registration cache \
         recorded (its top-level code depends on something that changed, e.g. a shared \
         module's state); reload toolhost to load it again"
    )]
    Differs(String),
}

impl LuaVm {
    /// Defers `file` on this VM: its functions count as present and it runs at first use.
    /// Defers `file` at its place in the load order: its top level, run later, sees the
    /// modules as they are now (as a cold start's run of it here would have).
    pub(crate) fn defer_file(&self, file: Arc<LazyFile>) {
        let view = ModuleView::now(&self.lua, &file.domain);
        self.defer_file_seeing(file, view);
    }

    /// Defers `file`; its run at first use sees the modules as `view` has them.
    pub(crate) fn defer_file_seeing(&self, file: Arc<LazyFile>, view: ModuleView) {
        self.pending
            .lock()
            .insert(file.index, Pending::Waiting(file, view));
    }

    /// The modules of `domain` on this VM as they are now.
    pub(crate) fn module_view(&self, domain: &str) -> ModuleView {
        ModuleView::now(&self.lua, domain)
    }

    /// Runs file `file_index` now if it was deferred; the error says why its functions are
    /// not there.
    pub(super) fn ensure_loaded(&self, file_index: u32) -> Result<(), DeferredFailed> {
        // Most files of a warm start stay deferred for good: the common case is one lookup,
        // without the run lock.
        if !self.pending.lock().contains_key(&file_index) {
            return Ok(());
        }
        // One run at a time on this VM (a caller's thread and the VM's own may both need
        // the file): the second finds it loaded.
        let _running = self.running.lock();
        let (file, view) = match self.pending.lock().get(&file_index) {
            None => return Ok(()),
            Some(Pending::Failed(failed)) => return Err(failed.clone()),
            Some(Pending::Waiting(file, view)) => (file.clone(), view.clone()),
        };
        let outcome = self.run_deferred(&file, &view);
        let mut pending = self.pending.lock();
        match outcome {
            Ok(()) => {
                pending.remove(&file_index);
                Ok(())
            }
            Err(failed) => {
                pending.insert(file_index, Pending::Failed(failed.clone()));
                Err(failed)
            }
        }
    }

    fn run_deferred(&self, file: &LazyFile, view: &ModuleView) -> Result<(), DeferredFailed> {
        // A shared check_fn must be the very function the file that owns it registered:
        // that file runs first.
        for owner in file.shared_checks.iter().flatten() {
            if owner.file_index() != file.index {
                self.ensure_loaded(owner.file_index())?;
            }
        }
        // The run has its own deadline; whatever deadline was current (a handler that
        // called another tool) is put back afterwards.
        let saved = clock::save(&self.lua);
        let loaded = view
            .seen_by(&self.lua, &file.domain, || {
                self.load_file(&file.spec(), &file.source)
            })
            .map_err(|e| LoadError::new(&file.display, None, e.to_string()))
            .and_then(|loaded| loaded);
        clock::restore(&self.lua, saved);
        let loaded = loaded.map_err(DeferredFailed::Load)?;
        let mut unclaimed: Vec<Option<_>> = loaded.tools.into_iter().map(Some).collect();
        let mut adopted: Vec<(LuaFnId, Function)> = Vec::new();
        let mut matches =
            loaded.hooks.is_empty() && loaded.resources.is_empty() && loaded.prompts.is_empty();
        for (ordinal, expected) in file.expected.iter().enumerate() {
            let found = unclaimed
                .iter_mut()
                .find(|tool| tool.as_ref().is_some_and(|tool| expected.matches(tool)));
            let Some(tool) = found.and_then(Option::take) else {
                matches = false;
                break;
            };
            let id = |role| LuaFnId::new(file.index, ordinal as u32, role);
            adopted.push((id(FnRole::Handler), tool.handler));
            if let Some(prepare) = tool.prepare {
                adopted.push((id(FnRole::Prepare), prepare));
            }
            if let Some(check) = tool.check_fn {
                match file.shared_checks.get(ordinal).copied().flatten() {
                    None => adopted.push((id(FnRole::Check), check)),
                    Some(owner) => {
                        let owned = match owner.file_index() == file.index {
                            true => adopted
                                .iter()
                                .find(|(i, _)| *i == owner)
                                .map(|(_, f)| f.clone()),
                            false => self.functions.lock().get(&owner).cloned(),
                        };
                        if owned.map(|f| f.to_pointer()) != Some(check.to_pointer()) {
                            matches = false;
                            break;
                        }
                    }
                }
            }
            if let Some(overrides) = tool.dynamic_schema_overrides {
                adopted.push((id(FnRole::Overrides), overrides));
            }
        }
        if !matches || unclaimed.iter().any(Option::is_some) {
            if let Some(cache) = &file.cache_file {
                // Best effort: the next start runs every file and writes it again.
                let _ = std::fs::remove_file(cache);
            }
            return Err(DeferredFailed::Differs(file.display.clone()));
        }
        // As `adopt`: an id kept again is checked again (see `LuaVm::sees_ctx`).
        let mut sees_ctx = self.sees_ctx.lock();
        for (id, _) in &adopted {
            sees_ctx.remove(id);
        }
        drop(sees_ctx);
        self.functions.lock().extend(adopted);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::DeferredFailed;
    use crate::error::LoadError;

    /// What every use of a deferred file's functions reports, byte for byte.
    #[test]
    fn deferred_failures_read_as_before() {
        let load = DeferredFailed::Load(LoadError::new("tools/a.lua", Some(3), "boom"));
        assert_eq!(
            load.to_string(),
            "tools/a.lua:3: boom (running the file at first use)"
        );
        assert_eq!(
            DeferredFailed::Differs("tools/a.lua".into()).to_string(),
            "tools/a.lua registered differently when it ran at first use than the registration \
             cache recorded (its top-level code depends on something that changed, e.g. a \
             shared module's state); reload toolhost to load it again"
        );
    }
}
