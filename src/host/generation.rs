//! One loaded generation of tools: discovery, the registry contents and a pool of VMs that
//! all hold the same functions. Building one is what `Host::build` (and hot reload) does.

use crate::discovery::{self, ToolDir, Verdict};
use crate::error::{Error, Result};
use crate::lua::{LuaVm, SpareThread, VmPool, VmSettings};
use crate::registry::{RegistryState, ToolEntry};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a generation is built from.
pub(super) struct Recipe<'a> {
    /// Tool directories, in load order.
    pub dirs: &'a [ToolDir],
    /// Explicit files instead of scanning (`check FILES`).
    pub only_files: Option<&'a [PathBuf]>,
    /// Run every registering file at load (no registration cache).
    pub run_every_file: bool,
    /// Where the verdict cache lives.
    pub cache_dir: &'a Path,
    /// VM setup.
    pub settings: &'a VmSettings,
    /// Native tools, registered before any Lua file.
    pub natives: &'a [ToolEntry],
    /// Native resources and prompts, registered before any Lua file.
    pub native_content: &'a super::NativeContent,
    /// Plugins whose operator allowed them to override tools.
    pub plugins_allowing_override: BTreeSet<String>,
    /// Number of VMs (at least 1).
    pub vms: usize,
    /// Sources of the previous generation, serving files that now fail.
    pub last_good: &'a discovery::Sources,
    /// `[sandbox] annotation_check`.
    pub annotation_check: discovery::AnnotationCheck,
    /// Load files while later ones are still judged, when nothing needs every verdict
    /// first (off only to compare both orders in tests).
    pub stream_cold: bool,
}

/// A loaded generation.
pub(super) struct Generation {
    /// Registry contents.
    pub state: RegistryState,
    /// The VMs.
    pub pool: VmPool,
    /// Per-file verdicts, sorted by path.
    pub verdicts: Vec<Verdict>,
    /// The source each loaded file came from.
    pub sources: discovery::Sources,
}

/// Discovers, loads the first VM (which decides the registry contents) and, at the same
/// time on other threads, the replica VMs; replicas keep only the files that registered
/// the same tools as on the first VM. Files whose registrations the registration cache
/// holds are not run: every VM runs them at first use.
pub(super) fn build(recipe: &Recipe<'_>) -> Result<Generation> {
    std::thread::scope(|scope| build_while_preparing(recipe, Pending::start(scope, recipe)))
}

/// [`build`], with the first VM, `effects.json` and the schema cache on their way
/// (`pending`).
fn build_while_preparing(recipe: &Recipe<'_>, mut pending: Pending<'_, '_>) -> Result<Generation> {
    let mut state = RegistryState::new(recipe.plugins_allowing_override.clone());
    for native in recipe.natives {
        state
            .apply(vec![native.clone()], Vec::new())
            .map_err(|rejection| Error::NativeTool(rejection.message))?;
    }
    let content = recipe.native_content;
    state
        .judge_content(&content.resources, &content.prompts)
        .map_err(|(_, message)| Error::NativeTool(message))?;
    state.insert_content(content.resources.clone(), content.prompts.clone());
    let started = std::time::Instant::now();
    let found = match recipe.only_files {
        Some(files) => {
            // A named file outside every tool directory counts as the first user directory's,
            // never the library's.
            let fallback = recipe
                .dirs
                .iter()
                .position(|d| !d.is_library())
                .unwrap_or(0);
            discovery::find_files(files, recipe.dirs, fallback)
        }
        None => discovery::find(recipe.dirs),
    };
    let mut registrations = pending.registrations(recipe);
    // Running file i needs only verdict i when no file comes from the registration cache
    // (planning needs every verdict) and none falls back to a last good version (reload):
    // a cold start or the first after an upgrade. Then the VMs run each file as soon as it
    // is judged.
    if recipe.stream_cold && registrations.holds_nothing() && recipe.last_good.is_empty() {
        return load_while_judging(recipe, state, found, registrations, pending, started);
    }
    let mut verdicts = found.judge_helped(Some(recipe.cache_dir), &|judging| {
        pending.offer(judging);
    });
    let judged = started.elapsed();
    // A file that no longer parses (or cannot be read) but loaded before keeps serving
    // its last good version.
    let mut unparsable = Vec::new();
    for (index, verdict) in verdicts.iter_mut().enumerate() {
        if verdict.error.is_some()
            && !verdict.registers
            && let Some(good) = recipe.last_good.get(verdict.path.as_os_str())
        {
            verdict.registers = true;
            verdict.source = Some(good.clone());
            // The digest names the source: none may survive from another one.
            verdict.digest = std::sync::OnceLock::new();
            unparsable.push(index);
        }
    }
    let (plan, planned) = discovery::plan(&verdicts, recipe.dirs, &mut registrations);
    let Prepared {
        vm: mut primary,
        mut effects,
        mut schemas,
        vm_thread,
    } = pending.take(recipe)?;
    let replica_count = recipe.vms.saturating_sub(1);
    // What the replicas load from while the first VM's load fills in `verdicts` (a copy
    // only when there are replicas: one VM is the common case of a one-shot command).
    let snapshot = match replica_count {
        0 => Vec::new(),
        _ => verdicts.clone(),
    };
    let mut replicas: Vec<Replica> = Vec::new();
    let mut sources = discovery::Sources::default();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..replica_count)
            .map(|_| scope.spawn(|| replica(recipe, &snapshot, &plan)))
            .collect();
        sources = primary.loading_without_gc(|vm| {
            discovery::load_all(
                &mut verdicts,
                recipe.dirs,
                vm,
                &mut state,
                recipe.last_good,
                &mut schemas,
                planned,
                &mut registrations,
                &mut effects,
            )
        });
        effects.write_if_changed();
        schemas.write_if_changed(recipe.cache_dir);
        registrations.write_if_changed();
        replicas = joined(handles);
    });
    for index in unparsable {
        let verdict = &mut verdicts[index];
        if !verdict.tools.is_empty() {
            verdict.last_good = true;
            if let Some(error) = &mut verdict.error {
                error.kept_last_good = true;
            }
        }
    }
    let replicas = reconciled(&verdicts, replicas);
    tracing::debug!(
        "discovery: {} candidates judged in {:?}, loaded on {} VM(s) in {:?}",
        verdicts.len(),
        judged,
        replicas.len() + 1,
        started.elapsed() - judged
    );
    Ok(Generation {
        state,
        pool: VmPool::new(primary, replicas, vm_thread)?,
        verdicts: settled(verdicts),
        sources,
    })
}

/// A cold build: the parser threads judge the candidates in load order while the caller
/// creates the first VM and runs each registering file as soon as its verdict is in (the
/// replicas do the same on their own threads); the registry then takes the files in order,
/// as when judging comes first.
fn load_while_judging(
    recipe: &Recipe<'_>,
    mut state: RegistryState,
    found: discovery::Found,
    mut registrations: discovery::Registrations,
    pending: Pending<'_, '_>,
    started: std::time::Instant,
) -> Result<Generation> {
    let replica_count = recipe.vms.saturating_sub(1);
    let no_plan = discovery::Plan::default();
    let (mut verdicts, loaded) = found.judge_while(Some(recipe.cache_dir), |judged| {
        std::thread::scope(|scope| {
            // Replicas run the same files on their own threads, each as soon as it is judged.
            let handles: Vec<_> = (0..replica_count)
                .map(|_| scope.spawn(|| replica(recipe, judged, &no_plan)))
                .collect();
            let primary = pending.take(recipe).map(|mut prepared| {
                let ran = prepared.vm.loading_without_gc(|vm| {
                    discovery::run_all(
                        judged,
                        recipe.dirs,
                        vm,
                        recipe.last_good,
                        &mut prepared.schemas,
                        discovery::PlannedEntries::none(),
                    )
                });
                (prepared, ran)
            });
            let replicas = joined(handles);
            primary.map(|(prepared, ran)| (prepared, ran, replicas))
        })
    });
    let (prepared, ran, replicas) = loaded?;
    let Prepared {
        vm: mut primary,
        mut effects,
        schemas,
        vm_thread,
    } = prepared;
    let ran_at = started.elapsed();
    let sources = primary.loading_without_gc(|vm| {
        discovery::commit_all(
            ran,
            &mut verdicts,
            recipe.dirs,
            vm,
            &mut state,
            recipe.last_good,
            &mut registrations,
            &mut effects,
        )
    });
    effects.write_if_changed();
    schemas.write_if_changed(recipe.cache_dir);
    registrations.write_if_changed();
    let replicas = reconciled(&verdicts, replicas);
    tracing::debug!(
        "discovery: {} candidates judged and run on {} VM(s) while judging in {:?}, committed in {:?}",
        verdicts.len(),
        replicas.len() + 1,
        ran_at,
        started.elapsed() - ran_at
    );
    Ok(Generation {
        state,
        pool: VmPool::new(primary, replicas, vm_thread)?,
        verdicts: settled(verdicts),
        sources,
    })
}

/// What a build needs that does not depend on discovery: the first VM, the effects cache
/// and the known schemas.
struct Prepared {
    /// The first VM, with nothing loaded yet.
    vm: LuaVm,
    /// `effects.json`, read.
    effects: discovery::Effects,
    /// The schema cache, read.
    schemas: discovery::KnownSchemas,
    /// The first VM's thread, started (`None`: the pool starts it).
    vm_thread: Option<SpareThread>,
}

/// The first VM, with nothing loaded yet, and the known schemas.
fn first_vm(recipe: &Recipe<'_>) -> Result<(LuaVm, discovery::KnownSchemas)> {
    let vm = LuaVm::new(recipe.settings).map_err(Error::Lua)?;
    Ok((vm, discovery::KnownSchemas::read(recipe.cache_dir)))
}

/// The registration cache this build uses. Explicit files (`check FILES`) always run:
/// checking them is the point.
fn registrations_of(recipe: &Recipe<'_>) -> discovery::Registrations {
    match (recipe.only_files, recipe.run_every_file) {
        (None, false) => discovery::Registrations::read(recipe.cache_dir).under_limits(
            recipe.settings.memory_limit_bytes,
            recipe.settings.probe_timeout,
        ),
        _ => discovery::Registrations::disabled(),
    }
}

/// The registration cache and a [`Prepared`] on their way, made on a thread of its own
/// while the caller lists and judges the candidates (reading the cache files and creating
/// a VM were half of a warm start, and none of it waits for discovery): it reads the
/// registration cache first (the caller needs it as soon as it has listed the candidates),
/// then creates the first VM and reads the known schemas, then reads `effects.json`
/// (needed last, when the files are committed). One thread, not one per part: on two cores
/// a third thread waited behind the caller for most of a warm start, and the caller then
/// waited for it. What the thread could not make, the caller makes itself. Between the VM
/// and `effects.json` the thread helps judge a warm start's candidates, when the caller has
/// offered them by then ([`discovery::SharedJudging`]); otherwise after `effects.json`, once
/// they are offered (the caller closes the offers before it waits for the thread).
struct Pending<'scope, 'env> {
    /// The registration cache, sent as soon as it is read; `None` once taken, or when the
    /// caller reads it.
    registrations: Option<std::sync::mpsc::Receiver<discovery::Registrations>>,
    /// Where the caller offers the thread a judging to help with; `None` once closed
    /// (before the caller waits for the thread, which may be waiting for an offer).
    offers: Option<std::sync::mpsc::SyncSender<Arc<discovery::SharedJudging>>>,
    /// The thread making the rest.
    thread: Option<PreparingThread<'scope>>,
    /// The recipe's lifetime, which the thread borrows.
    recipe: std::marker::PhantomData<&'env ()>,
}

/// What the preparing thread makes after the registration cache: the first VM and the
/// known schemas, the effects cache (`None` when reading it panicked) and the first VM's
/// thread (`None` when it could not start; the pool then tries again).
type Made = (
    Result<(LuaVm, discovery::KnownSchemas)>,
    Option<discovery::Effects>,
    Option<SpareThread>,
);

/// The thread that reads the caches and creates the first VM.
type PreparingThread<'scope> = std::thread::ScopedJoinHandle<'scope, Made>;

impl<'scope, 'env> Pending<'scope, 'env> {
    /// Starts the thread for `recipe` in `scope`.
    fn start(scope: &'scope std::thread::Scope<'scope, 'env>, recipe: &'env Recipe<'env>) -> Self {
        let (send, receive) = std::sync::mpsc::sync_channel(1);
        let (offers, offered) = std::sync::mpsc::sync_channel::<Arc<discovery::SharedJudging>>(1);
        let thread = std::thread::Builder::new()
            .name("toolhost-prepare".into())
            .spawn_scoped(scope, move || {
                // The caller reads it itself when it is gone (it failed to wait).
                let _ = send.send(registrations_of(recipe));
                let vm = first_vm(recipe);
                // Judging offered by now comes first: the caller waits for it sooner than
                // for `effects.json`.
                let early = offered.try_recv().ok();
                if let Some(judging) = &early {
                    help(judging);
                }
                // A read that panics must not take the VM with it.
                let effects =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| effects_of(recipe)))
                        .ok();
                // Not offered before `effects.json` (a thousand candidates take the caller
                // longer to list than the first VM takes to make): the judging comes
                // before the VM's thread when it is there now, after it otherwise (a build
                // that offers nothing, a cold start, waits for that thread only).
                let late = match early {
                    Some(_) => None,
                    None => offered.try_recv().ok(),
                };
                if let Some(judging) = &late {
                    help(judging);
                }
                // Needed last, once the files are loaded: starting it is off the caller's
                // path here (see `SpareThread`).
                let vm_thread = SpareThread::start(0).ok();
                // Still not offered: wait for the offer and help judge what is left. The
                // caller closes the offers before it waits for this thread, so this ends
                // as soon as it does.
                if early.is_none()
                    && late.is_none()
                    && let Ok(judging) = offered.recv()
                {
                    help(&judging);
                }
                (vm, effects, vm_thread)
            })
            .ok();
        Self {
            registrations: thread.is_some().then_some(receive),
            offers: Some(offers),
            thread,
            recipe: std::marker::PhantomData,
        }
    }

    /// The registration cache, waiting for the thread if it reads it (read here if the
    /// thread ended without sending it).
    fn registrations(&mut self, recipe: &Recipe<'_>) -> discovery::Registrations {
        self.registrations
            .take()
            .and_then(|receive| receive.recv().ok())
            .unwrap_or_else(|| registrations_of(recipe))
    }

    /// Offers the thread a judging to help with (dropped when it has ended or already has
    /// one: the caller judges it all then).
    fn offer(&self, judging: Arc<discovery::SharedJudging>) {
        if let Some(offers) = &self.offers {
            let _ = offers.try_send(judging);
        }
    }

    /// The [`Prepared`], waiting for the thread.
    fn take(mut self, recipe: &Recipe<'_>) -> Result<Prepared> {
        self.offers = None;
        let (vm, effects, vm_thread) = match self.thread.take() {
            Some(thread) => thread.join().unwrap_or_else(|_| {
                let failed = mlua::Error::runtime("the thread preparing the first VM failed");
                (Err(Error::Lua(failed)), None, None)
            }),
            None => (first_vm(recipe), Some(effects_of(recipe)), None),
        };
        let (vm, schemas) = vm?;
        let effects = effects.unwrap_or_else(|| {
            // A read that failed this way would fail again: analyse afresh instead.
            tracing::warn!("reading effects.json failed; analysing every file afresh");
            discovery::Effects::uncached(recipe.annotation_check)
        });
        Ok(Prepared {
            vm,
            effects,
            schemas,
            vm_thread,
        })
    }
}

impl Drop for Pending<'_, '_> {
    /// A build that ends early (an error before the files load) still joins the thread
    /// here: a thread that panicked and was never joined would make the scope panic.
    fn drop(&mut self) {
        self.offers = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Helps judge `judging`. A panic there (each judgement catches its own) must not take the
/// VM this thread made with it: the caller then judges what is left.
fn help(judging: &discovery::SharedJudging) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| judging.help()));
}

/// How this build analyses effects: with `effects.json`, or afresh for explicit files
/// (`check FILES`), which always run too.
fn effects_of(recipe: &Recipe<'_>) -> discovery::Effects {
    match recipe.only_files {
        None => discovery::Effects::read(recipe.cache_dir, recipe.annotation_check),
        Some(_) => discovery::Effects::uncached(recipe.annotation_check),
    }
}

/// A loaded replica VM and what it made of each file.
type Replica = (LuaVm, Vec<discovery::ReplicaFile>);

/// A replica VM loading `verdicts` (each as soon as it is judged) and deferring the files
/// in `plan`; `None` when the VM cannot be made.
fn replica(
    recipe: &Recipe<'_>,
    verdicts: &dyn discovery::InOrder,
    plan: &discovery::Plan,
) -> Option<Replica> {
    let mut vm = LuaVm::new(recipe.settings).ok()?;
    let files = vm.loading_without_gc(|vm| {
        discovery::load_replica(verdicts, recipe.dirs, vm, recipe.last_good, plan)
    });
    Some((vm, files))
}

/// The replicas that loaded (one that could not is left out, with a warning).
fn joined(handles: Vec<std::thread::ScopedJoinHandle<'_, Option<Replica>>>) -> Vec<Replica> {
    let mut replicas = Vec::new();
    for handle in handles {
        match handle.join() {
            Ok(Some(replica)) => replicas.push(replica),
            _ => tracing::warn!("a replica VM could not be loaded; continuing with fewer VMs"),
        }
    }
    replicas
}

/// The replicas, each keeping only the files that registered on it what they registered
/// on the first VM.
fn reconciled(verdicts: &[Verdict], replicas: Vec<Replica>) -> Vec<LuaVm> {
    replicas
        .into_iter()
        .map(|(mut vm, files)| {
            discovery::reconcile_replica(verdicts, files, &mut vm);
            vm
        })
        .collect()
}

/// The verdicts as a generation keeps them: sources dropped, sorted by path.
fn settled(mut verdicts: Vec<Verdict>) -> Vec<Verdict> {
    for verdict in &mut verdicts {
        verdict.source = None;
    }
    verdicts.sort_by(|a, b| a.path.cmp(&b.path));
    verdicts
}
