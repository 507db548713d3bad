//! Loading registering files: run each in the VM, turn its registrations into registry
//! entries, apply them atomically. A file that raises, registers something invalid or is
//! rejected by the registry contributes nothing; every other file still loads.

use super::{ToolDir, Verdict};
use crate::lua::{FileSpec, LoadingFile, LuaVm, SearchDir};
use crate::registry::{Handler, HookEntry, Probe, RegistryState, ToolEntry, default_description};
use std::sync::Arc;

/// Loads every registering verdict, in order, recording each file's tools or error in its
/// verdict.
pub fn load_all(
    verdicts: &mut [Verdict],
    dirs: &[ToolDir],
    vm: &mut LuaVm,
    state: &mut RegistryState,
) {
    let libs: Vec<Option<SearchDir>> = dirs
        .iter()
        .map(|dir| SearchDir::new(&dir.path.join("lib")))
        .collect();
    for verdict in verdicts.iter_mut().filter(|v| v.registers) {
        let Some(source) = verdict.source.take() else {
            continue;
        };
        let Some(dir) = dirs.get(verdict.dir_index) else {
            continue;
        };
        let mut search_dirs: Vec<SearchDir> = verdict
            .package_dir
            .as_deref()
            .and_then(SearchDir::new)
            .into_iter()
            .collect();
        // The file's own lib/ first, then the other tool directories' lib/ in order.
        search_dirs.extend(libs[verdict.dir_index].iter().cloned());
        search_dirs.extend(
            libs.iter()
                .enumerate()
                .filter(|(i, _)| *i != verdict.dir_index)
                .filter_map(|(_, lib)| lib.clone()),
        );
        let spec = FileSpec {
            display: &verdict.shown,
            search_dirs,
            capabilities: dir.capabilities.as_deref(),
        };
        let outcome = vm
            .load_file(&spec, &source)
            .and_then(|loaded| commit(loaded, verdict, dir, vm, state));
        match outcome {
            Ok(names) => verdict.tools = names,
            Err(error) => {
                tracing::warn!("{error}");
                verdict.error = Some(error);
            }
        }
    }
}

/// Adopts the file's functions into the VM and applies its entries to the registry.
fn commit(
    loaded: LoadingFile,
    verdict: &Verdict,
    dir: &ToolDir,
    vm: &mut LuaVm,
    state: &mut RegistryState,
) -> Result<Vec<String>, String> {
    let mark = vm.mark();
    let lines: Vec<u32> = loaded.tools.iter().map(|t| t.line).collect();
    let mut entries = Vec::with_capacity(loaded.tools.len());
    let mut env_grants = Vec::with_capacity(loaded.tools.len());
    for tool in loaded.tools {
        let handler = vm.adopt(tool.handler);
        env_grants.push((handler, tool.requires_env.clone()));
        let description = tool
            .description
            .unwrap_or_else(|| default_description(&tool.schema));
        entries.push(ToolEntry {
            name: tool.name,
            toolset: tool.toolset,
            schema: Arc::new(tool.schema),
            handler: Handler::Lua(handler),
            check_fn: tool.check_fn.map(|f| Probe::Lua(vm.adopt_shared(f))),
            requires_env: tool.requires_env,
            is_async: tool.is_async,
            description,
            emoji: tool.emoji,
            max_result_size_chars: tool.max_result_size_chars,
            dynamic_schema_overrides: tool
                .dynamic_schema_overrides
                .map(|f| Probe::Lua(vm.adopt(f))),
            override_existing: tool.override_existing,
            scope: tool.scope.or_else(|| dir.scope.clone()),
            timeout_ms: tool.timeout_ms,
            parallel_safe: tool.parallel_safe,
            requires_approval: tool.requires_approval,
            source: dir.source.clone(),
            file: Some(verdict.path.clone()),
            line: Some(tool.line),
        });
    }
    let hooks: Vec<HookEntry> = loaded
        .hooks
        .into_iter()
        .map(|hook| HookEntry {
            event: hook.event,
            function: vm.adopt(hook.function),
            file: verdict.path.clone(),
            line: hook.line,
            source: dir.source.clone(),
        })
        .collect();
    let names: Vec<String> = entries.iter().map(|e| e.name.to_string()).collect();
    match state.apply(entries, hooks) {
        Ok(applied) => {
            for warning in applied.warnings {
                tracing::warn!("{warning}");
            }
            for (handler, names) in env_grants {
                vm.allow_env(handler, &names);
            }
            let mut unique = names;
            unique.dedup();
            Ok(unique)
        }
        Err(rejection) => {
            vm.rollback(mark);
            let line = lines.get(rejection.index).copied().unwrap_or(0);
            Err(format!("{}:{line}: {}", verdict.shown, rejection.message))
        }
    }
}
