//! Loading registering files: run each in the VM, turn its registrations into registry
//! entries, apply them atomically. A file that raises, registers something invalid or is
//! rejected by the registry contributes nothing; every other file still loads.
//!
//! Compiling parameter schemas is the most expensive part of a registration and needs no
//! Lua, so it runs on a second thread while the VM goes on running the next files; the
//! registry then takes the files in order, each all or nothing.

use super::containment;
use super::effects::Effects;
use super::known_schemas::KnownSchemas;
use super::model_facing::model_facing;
use super::registrations::{Registrations, lazy_file};
use super::{InOrder, ToolDir, Verdict};
use crate::error::LoadError;
use crate::lua::register::record::{Expected, SharedCheck, ToolRecord};
use crate::lua::{FileSpec, LazyFile, LoadingFile, LuaVm, ModuleView, SearchDir};
use crate::registry::{
    ContentFn, FnRole, FunctionSchema, Handler, HookEntry, LuaFnId, Origin, ParametersValidator,
    Probe, PromptEntry, RegistryState, ResourceEntry, ToolEntry, compile_parameters_at,
    default_description, parameters_hash,
};
// The load's maps hash with foldhash: every registering file of a warm start goes through
// several of them, and SipHash (std's default) was a visible part of that.
use foldhash::HashMap;
use serde_json::{Map, Value};
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc;

/// A file whose Lua ran: its entries (validators still to come) and hooks.
struct Staged {
    entries: Vec<ToolEntry>,
    lines: Vec<u32>,
    hooks: Vec<HookEntry>,
    /// The `requires_env` of every tool of the file: what its code may read.
    env_grants: Vec<String>,
    /// What to cache of this run, when it may be cached: whether it required a module,
    /// its records and, per record, the earlier `check_fn` it shares.
    cacheable: Option<Cacheable>,
    /// The file's registrations came from the cache: it runs on each VM at first use.
    deferred: Option<Arc<LazyFile>>,
    /// The parameters digests of its tools, when records (cached or just made) hold them.
    digests: Option<Vec<Option<u64>>>,
    /// Its `registry.resource` registrations.
    resources: Vec<ResourceEntry>,
    /// Its `registry.prompt` registrations.
    prompts: Vec<PromptEntry>,
}

/// A run that may be cached: whether it required a module, its records and, per record,
/// the id of the earlier `check_fn` it shares.
type Cacheable = (bool, Vec<ToolRecord>, Vec<Option<LuaFnId>>);

/// The files whose registrations come from the registration cache, by load position.
pub(crate) type Plan = HashMap<usize, Arc<LazyFile>>;

/// The registry entries of the files in a [`Plan`], built from their records, for the
/// first VM to commit; and the search lists planning made, which the load goes on with
/// (resolving the `lib/` folders again walked every one's path).
pub(crate) struct PlannedEntries(HashMap<usize, Staged>, Option<Libs>);

impl PlannedEntries {
    /// No file taken from the registration cache (it holds nothing usable).
    pub(crate) fn none() -> Self {
        Self(HashMap::default(), None)
    }
}

/// Decides which registering files are taken from the registration cache (their key still
/// matches and every record still makes a valid entry) instead of running at load.
pub(crate) fn plan(
    verdicts: &[Verdict],
    dirs: &[ToolDir],
    cache: &mut Registrations,
) -> (Plan, PlannedEntries) {
    if cache.file().is_none() {
        return (Plan::default(), PlannedEntries::none());
    }
    // Sized once: on a warm start every registering file is planned (growing them one
    // entry at a time rehashed them again and again).
    let mut plan = Plan::with_capacity_and_hasher(verdicts.len(), Default::default());
    let mut staged = HashMap::with_capacity_and_hasher(verdicts.len(), Default::default());
    let libs = Libs::of(dirs);
    let cache_file = cache.file().map(Path::to_path_buf);
    // Keyed by the path's bytes: `Path`'s hash walks its components.
    let mut positions: HashMap<&OsStr, usize> =
        HashMap::with_capacity_and_hasher(verdicts.len(), Default::default());
    positions.extend(
        registering(verdicts, dirs).map(|(index, verdict, _, _)| (verdict.path.as_os_str(), index)),
    );
    for (index, verdict, source, dir) in registering(verdicts, dirs) {
        let search = libs.search_dirs(verdict, dir);
        // Kept with the verdict: the effects check names the file by the same digest.
        let digest = verdict.digest_of(&source);
        let probe = lazy_file(
            verdict,
            dir,
            libs.domain(verdict.dir_index, dir),
            search,
            index,
            source,
        );
        let Some(hit) = cache.lookup(&verdict.path, (&probe, digest), dir.scope.as_deref()) else {
            continue;
        };
        let Some(shared_checks) = resolve_shared_checks(&hit.expected, index, &positions, &plan)
        else {
            continue;
        };
        let lazy = Arc::new(LazyFile {
            expected: hit.expected.into(),
            shared_checks,
            cache_file: cache_file.clone(),
            ..probe
        });
        if let Some(entries) = staged_from_cache(&lazy, hit.records, hit.schemas, verdict, dir) {
            staged.insert(index, entries);
            plan.insert(index, lazy);
        }
    }
    (plan, PlannedEntries(staged, Some(libs)))
}

/// The ids of the shared `check_fn`s of a cached file's records; `None` when one refers to
/// a registration that is not itself deferred with that very `check_fn` (the file then
/// runs at load, and shares whatever the files before it registered).
fn resolve_shared_checks(
    records: &[Expected],
    index: usize,
    positions: &HashMap<&OsStr, usize>,
    plan: &Plan,
) -> Option<Vec<Option<LuaFnId>>> {
    records
        .iter()
        .enumerate()
        .map(|(position, record)| {
            let Some(shared) = &record.check_fn_of else {
                return Some(None);
            };
            let owner = *positions.get(shared.file.as_os_str())?;
            let owner_records = match owner == index {
                true => records,
                false => &plan.get(&owner)?.expected[..],
            };
            let ordinal = shared.ordinal as usize;
            let owned = owner_records.get(ordinal)?;
            let earlier = owner < index || (owner == index && ordinal < position);
            (earlier && owned.check_fn && owned.check_fn_of.is_none())
                .then(|| Some(LuaFnId::new(owner as u32, shared.ordinal, FnRole::Check)))
        })
        .collect()
}

/// A tool's parameters validator (compiled now, or lazily when its schema is known to
/// compile), or the field at fault and what is wrong there.
type Compiled = Result<ParametersValidator, (String, String)>;

/// Compiles a schema at registration (it was not known to compile).
fn compile_now(schema: &Map<String, Value>) -> Compiled {
    compile_parameters_at(schema).map(ParametersValidator::compiled)
}

/// The source each file loaded from (the current one, or its last good version).
/// Keyed by the path's bytes (`OsString`): `Path`'s own hash walks its components, and
/// hashing paths was a visible part of a warm start. The paths are discovery's, one
/// spelling per file.
pub(crate) type Sources = HashMap<std::ffi::OsString, Arc<[u8]>>;

/// One file after its Lua ran (phase 1).
struct Ran {
    index: usize,
    outcome: Result<Staged, LoadError>,
    source: Arc<[u8]>,
    /// The current version's error when the last good version was loaded instead.
    replaced_error: Option<LoadError>,
    /// For a file taken from the registration cache: the modules as they were at its
    /// place in the load order (what its run at first use must see).
    modules_here: Option<ModuleView>,
}

/// Loads every registering verdict, in order, recording each file's tools or error in its
/// verdict. A file whose current version fails and that has a different `last_good`
/// source loads that instead (its error still reported). Parameters schemas in `schemas`
/// (known to compile) are compiled at their tool's first call; the others now, on a
/// second thread. Returns the sources that loaded.
#[allow(clippy::too_many_arguments)]
pub(crate) fn load_all(
    verdicts: &mut Vec<Verdict>,
    dirs: &[ToolDir],
    vm: &mut LuaVm,
    state: &mut RegistryState,
    last_good: &Sources,
    schemas: &mut KnownSchemas,
    planned: PlannedEntries,
    registrations: &mut Registrations,
    effects: &mut Effects,
) -> Sources {
    let ran = run_all(&*verdicts, dirs, vm, last_good, schemas, planned);
    commit_all(
        ran,
        verdicts,
        dirs,
        vm,
        state,
        last_good,
        registrations,
        effects,
    )
}

/// The files of a load whose Lua ran (or whose entries came from the registration cache),
/// in load order, with their schemas' validators: what [`commit_all`] applies.
pub(crate) struct RanFiles {
    ran: Vec<Ran>,
    compiled: HashMap<(usize, usize), Compiled>,
    libs: Libs,
}

/// Phase 1 of a load: runs every registering file in load order as soon as its verdict is
/// judged (`verdicts` may still be judging later files) and compiles the schemas not known
/// to compile on a second thread. Nothing reaches the registry yet.
pub(crate) fn run_all(
    verdicts: &dyn InOrder,
    dirs: &[ToolDir],
    vm: &mut LuaVm,
    last_good: &Sources,
    schemas: &mut KnownSchemas,
    planned: PlannedEntries,
) -> RanFiles {
    let PlannedEntries(mut planned, libs) = planned;
    let libs = libs.unwrap_or_else(|| Libs::of(dirs));
    type Job = ((usize, usize), FunctionSchema, Option<u64>);
    let (jobs, job_queue) = mpsc::channel::<Job>();
    let (results, compiled_queue) = mpsc::channel::<((usize, usize), Compiled, Option<u64>)>();
    std::thread::scope(|scope| {
        // Started on the first unknown schema: a warm start needs no thread.
        let mut worker = None;
        let mut job_queue = Some(job_queue);
        // Sized for one tool per candidate (growing them rehashed and moved them
        // again and again on a warm start).
        let mut compiled: HashMap<(usize, usize), Compiled> =
            HashMap::with_capacity_and_hasher(verdicts.count(), Default::default());
        let mut ran: Vec<Ran> = Vec::with_capacity(verdicts.count());
        for (index, verdict, source, dir) in registering_in_order(verdicts, dirs) {
            let file = match planned.remove(&index) {
                Some(staged) => Ran {
                    index,
                    modules_here: staged
                        .deferred
                        .as_ref()
                        .map(|lazy| vm.module_view(&lazy.domain)),
                    outcome: Ok(staged),
                    source,
                    replaced_error: None,
                },
                None => run_with_fallback(verdict, dir, &libs, index, source, last_good, vm),
            };
            if let Ok(staged) = &file.outcome {
                for (tool, entry) in staged.entries.iter().enumerate() {
                    let key = (index, tool);
                    // A record carries its schema's digest: no need to hash it again.
                    let digest = match &staged.digests {
                        Some(digests) => digests.get(tool).copied().flatten(),
                        None => parameters_hash(&entry.schema),
                    };
                    if digest.is_some_and(|d| schemas.take_known(d)) {
                        compiled.insert(key, Ok(ParametersValidator::lazy()));
                        continue;
                    }
                    if let Some(queue) = job_queue.take() {
                        let results = results.clone();
                        worker = std::thread::Builder::new()
                            .name("toolhost-schema".into())
                            .spawn_scoped(scope, move || {
                                for (key, schema, digest) in queue {
                                    let _ = results.send((key, compile_now(&schema), digest));
                                }
                            })
                            .ok();
                    }
                    let sent =
                        worker.is_some() && jobs.send((key, entry.schema.clone(), digest)).is_ok();
                    if !sent {
                        let outcome = compile_now(&entry.schema);
                        if let (Ok(_), Some(digest)) = (&outcome, digest) {
                            schemas.compiled(digest);
                        }
                        compiled.insert(key, outcome);
                    }
                }
            }
            ran.push(file);
        }
        drop(jobs);
        drop(results);
        if let Some(worker) = worker {
            let _ = worker.join();
        }
        for (key, outcome, digest) in compiled_queue.try_iter() {
            if let (Ok(_), Some(digest)) = (&outcome, digest) {
                schemas.compiled(digest);
            }
            compiled.insert(key, outcome);
        }
        RanFiles {
            ran,
            compiled,
            libs,
        }
    })
}

/// Phase 2 of a load: applies the files that ran to the registry in load order, each all
/// or nothing (a rejected one falls back to its last good version), records what the
/// registration cache keeps, and returns the sources that loaded. Every verdict is judged.
#[allow(clippy::too_many_arguments)]
pub(crate) fn commit_all(
    ran: RanFiles,
    verdicts: &mut [Verdict],
    dirs: &[ToolDir],
    vm: &mut LuaVm,
    state: &mut RegistryState,
    last_good: &Sources,
    registrations: &mut Registrations,
    effects: &mut Effects,
) -> Sources {
    let mut modules = containment::Modules::default();
    let RanFiles {
        ran,
        mut compiled,
        libs,
    } = ran;
    let mut sources = Sources::with_capacity_and_hasher(ran.len(), Default::default());
    for mut file in ran {
        let index = file.index;
        let mut outcome =
            std::mem::replace(&mut file.outcome, Err(LoadError::new("", None, "not run")));
        let (cacheable, deferred) = match outcome.as_mut() {
            Ok(staged) => (
                staged
                    .cacheable
                    .take()
                    .map(|c| with_shared_checks(c, verdicts)),
                staged.deferred.take(),
            ),
            Err(_) => (None, None),
        };
        let verdict = &mut verdicts[index];
        let mut result = outcome.and_then(|staged| {
            let search = dirs
                .get(verdict.dir_index)
                .map(|dir| libs.search_dirs(verdict, dir))
                .unwrap_or_default();
            let judged = (&file.source[..], &search[..]);
            commit(
                staged,
                index,
                &mut compiled,
                verdict,
                vm,
                state,
                (effects, judged),
            )
            .map_err(|error| at_field_line(error, &file.source))
        });
        if let Err(error) = &result
            && file.replaced_error.is_none()
            && let Some(fallback) = fallback_for(verdict, &file.source, last_good)
            && let Some(dir) = dirs.get(verdict.dir_index)
        {
            // Rejected by the registry (or a schema that does not compile): the last
            // good version takes its place; its functions overwrite this version's.
            file.replaced_error = Some(error.clone());
            compiled.retain(|(i, _), _| *i != index);
            let search = libs.search_dirs(verdict, dir);
            result = run_file(verdict, dir, &libs, index, &fallback, vm).and_then(|staged| {
                let judged = (&fallback[..], &search[..]);
                commit(
                    staged,
                    index,
                    &mut compiled,
                    verdict,
                    vm,
                    state,
                    (effects, judged),
                )
            });
            file.source = fallback;
        }
        match (result, file.replaced_error) {
            (Ok(names), replaced) => {
                verdict.tools = names;
                if replaced.is_none()
                    && let Some(dir) = dirs.get(verdict.dir_index)
                {
                    if let Some(lazy) = deferred {
                        tracing::debug!(
                            "{}: registrations taken from the cache; the file runs at first use",
                            verdict.shown
                        );
                        let view = file.modules_here.take().unwrap_or_default();
                        vm.defer_file_seeing(lazy, view);
                        registrations.keep_read(&verdict.path);
                    } else if let Some((required, records)) = cacheable {
                        let search = libs.search_dirs(verdict, dir);
                        // A warm start must behave like a cold one: only a file whose
                        // top level acts on nothing outside itself may be skipped.
                        if containment::is_contained(verdict, &search, &mut modules) {
                            let inputs = lazy_file(
                                verdict,
                                dir,
                                libs.domain(verdict.dir_index, dir),
                                search,
                                index,
                                file.source.clone(),
                            );
                            let digest = verdict.digest_of(&inputs.source);
                            let key = registrations.key(
                                (&inputs, digest),
                                dir.scope.as_deref(),
                                required,
                            );
                            registrations.keep(&verdict.path, &key, required, &records);
                        }
                    }
                }
                if let Some(mut error) = replaced {
                    error.kept_last_good = true;
                    tracing::warn!(target: "toolhost::load", "{error}");
                    verdict.error = Some(error);
                    verdict.last_good = true;
                }
                sources.insert(verdict.path.clone().into_os_string(), file.source);
            }
            (Err(error), replaced) => {
                let error = replaced.unwrap_or(error);
                tracing::warn!(target: "toolhost::load", "{error}");
                verdict.error = Some(error);
            }
        }
    }
    sources
}

/// [`registering`] over verdicts that may still be being judged: each is waited for in
/// turn.
fn registering_in_order<'a>(
    verdicts: &'a dyn InOrder,
    dirs: &'a [ToolDir],
) -> impl Iterator<Item = (usize, &'a Verdict, Arc<[u8]>, &'a ToolDir)> {
    (0..verdicts.count()).filter_map(move |index| {
        let verdict = verdicts.verdict(index);
        let source = verdict.source.clone()?;
        let dir = dirs.get(verdict.dir_index)?;
        verdict.registers.then_some((index, verdict, source, dir))
    })
}

/// The registering files that have a source and a directory, with their positions.
fn registering<'a>(
    verdicts: &'a [Verdict],
    dirs: &'a [ToolDir],
) -> impl Iterator<Item = (usize, &'a Verdict, Arc<[u8]>, &'a ToolDir)> {
    verdicts.iter().enumerate().filter_map(|(index, verdict)| {
        let source = verdict.source.clone()?;
        let dir = dirs.get(verdict.dir_index)?;
        verdict.registers.then_some((index, verdict, source, dir))
    })
}

/// Runs a file's current source, or its last good version when the current one fails.
fn run_with_fallback(
    verdict: &Verdict,
    dir: &ToolDir,
    libs: &Libs,
    index: usize,
    source: Arc<[u8]>,
    last_good: &Sources,
    vm: &mut LuaVm,
) -> Ran {
    let mut file = Ran {
        index,
        modules_here: None,
        outcome: run_file(verdict, dir, libs, index, &source, vm),
        source,
        replaced_error: None,
    };
    if let (Err(error), Some(fallback)) = (
        &file.outcome,
        fallback_for(verdict, &file.source, last_good),
    ) {
        file.replaced_error = Some(error.clone());
        file.outcome = run_file(verdict, dir, libs, index, &fallback, vm);
        file.source = fallback;
    }
    file
}

/// The last good source of a file, when it differs from `current`.
fn fallback_for(verdict: &Verdict, current: &Arc<[u8]>, last_good: &Sources) -> Option<Arc<[u8]>> {
    last_good
        .get(verdict.path.as_os_str())
        .filter(|good| good[..] != current[..])
        .cloned()
}

/// Runs one file's source on the VM and stages its registrations.
fn run_file(
    verdict: &Verdict,
    dir: &ToolDir,
    libs: &Libs,
    index: usize,
    source: &[u8],
    vm: &mut LuaVm,
) -> Result<Staged, LoadError> {
    let chunk_name = model_facing(Path::new(&verdict.shown), &dir.path);
    let spec = FileSpec {
        display: &verdict.shown,
        chunk_name: &chunk_name,
        index: index as u32,
        domain: libs.domain(verdict.dir_index, dir),
        search_dirs: libs.search_dirs(verdict, dir),
        capabilities: dir.capabilities.as_deref(),
        capability_hint: dir.capability_hint.as_deref(),
    };
    vm.load_file(&spec, source)
        .map(|loaded| stage(loaded, index as u32, verdict, dir, vm))
        .map_err(|error| at_field_line(error, source))
}

/// Moves a registration error from the `registry.register` line to the line of the field at
/// fault, when the source shows it.
fn at_field_line(mut error: LoadError, source: &[u8]) -> LoadError {
    if let (Some(field), Some(line)) = (&error.field, error.line)
        && let Ok(text) = std::str::from_utf8(source)
        && let Some(found) = super::field_line::field_line(text, line, field)
    {
        error.line = Some(found);
    }
    error
}

/// Where `require` looks for the files of each tool directory (what every one of its
/// files but a package's shares, made once per load rather than once per file), and each
/// directory's trust domain.
pub(super) struct Libs {
    /// Per tool directory: its own `lib/`, then the other directories' `lib/` in order.
    shared: Vec<Arc<[SearchDir]>>,
    /// Per tool directory: its trust domain (`builtin`, `plugin:<id>`).
    domains: Vec<Arc<str>>,
}

impl Libs {
    /// The `lib/` folders of `dirs`.
    pub(super) fn of(dirs: &[ToolDir]) -> Self {
        let libs: Vec<Option<SearchDir>> = dirs
            .iter()
            .map(|dir| {
                let lib = dir.path.join("lib");
                SearchDir::new(&lib).map(|found| found.shown_as(model_facing(&lib, &dir.path)))
            })
            .collect();
        let shared = (0..dirs.len())
            .map(|own| {
                libs[own]
                    .iter()
                    .chain(
                        libs.iter()
                            .enumerate()
                            .filter(|(i, _)| *i != own)
                            .filter_map(|(_, lib)| lib.as_ref()),
                    )
                    .cloned()
                    .collect()
            })
            .collect();
        let domains = dirs
            .iter()
            .map(|dir| dir.source.to_string().into())
            .collect();
        Self { shared, domains }
    }

    /// Where `require` looks for this file: its package dir, its own `lib/`, then the
    /// other tool directories' `lib/` in order.
    pub(super) fn search_dirs(&self, verdict: &Verdict, dir: &ToolDir) -> Arc<[SearchDir]> {
        let package = verdict.package_dir.as_deref().and_then(|package| {
            SearchDir::new(package).map(|found| found.shown_as(model_facing(package, &dir.path)))
        });
        let shared = self.shared.get(verdict.dir_index);
        match (package, shared) {
            (None, Some(shared)) => shared.clone(),
            (package, shared) => package
                .into_iter()
                .chain(shared.into_iter().flat_map(|dirs| dirs.iter().cloned()))
                .collect(),
        }
    }

    /// The trust domain of tool directory `dir_index`'s files.
    pub(super) fn domain(&self, dir_index: usize, dir: &ToolDir) -> Arc<str> {
        self.domains
            .get(dir_index)
            .cloned()
            .unwrap_or_else(|| dir.source.to_string().into())
    }
}

/// What a replica VM made of one file: the tool names it registered, or nothing when the
/// file failed there.
pub(crate) struct ReplicaFile {
    file_index: u32,
    names: Option<Vec<String>>,
    env_grants: Vec<String>,
    /// Taken from the registration cache (deferred on the replica).
    deferred: bool,
}

/// Runs the registering files on a replica VM of a pool (on its own thread, while the first
/// VM loads; on a cold start each file as soon as it is judged). Each file's functions get
/// the same ids as on the first VM.
pub(crate) fn load_replica(
    verdicts: &dyn InOrder,
    dirs: &[ToolDir],
    vm: &mut LuaVm,
    last_good: &Sources,
    plan: &Plan,
) -> Vec<ReplicaFile> {
    let libs = Libs::of(dirs);
    let mut files = Vec::new();
    for (index, verdict, source, dir) in registering_in_order(verdicts, dirs) {
        if let Some(lazy) = plan.get(&index) {
            let mut names: Vec<String> = lazy.expected.iter().map(|t| t.name.clone()).collect();
            names.dedup();
            let env_grants = lazy
                .expected
                .iter()
                .flat_map(|t| t.requires_env.iter().cloned())
                .collect();
            vm.defer_file(lazy.clone());
            files.push(ReplicaFile {
                file_index: index as u32,
                names: Some(names),
                env_grants,
                deferred: true,
            });
            continue;
        }
        let outcome = run_with_fallback(verdict, dir, &libs, index, source, last_good, vm).outcome;
        let file_index = index as u32;
        files.push(match outcome {
            Ok(staged) => {
                let mut names: Vec<String> =
                    staged.entries.iter().map(|e| e.name.to_string()).collect();
                names.dedup();
                ReplicaFile {
                    file_index,
                    names: Some(names),
                    env_grants: staged.env_grants,
                    deferred: false,
                }
            }
            Err(_) => ReplicaFile {
                file_index,
                names: None,
                env_grants: Vec::new(),
                deferred: false,
            },
        });
    }
    files
}

/// Keeps on a replica only the files that registered exactly what the first VM accepted
/// (non-deterministic top-level code can differ); the others' tools run on the VMs that
/// agree.
pub(crate) fn reconcile_replica(primary: &[Verdict], files: Vec<ReplicaFile>, vm: &mut LuaVm) {
    for file in files {
        let Some(verdict) = primary.get(file.file_index as usize) else {
            continue;
        };
        let loaded = verdict.error.is_none() || verdict.last_good;
        // A deferred file would run its current source, which the first VM did not load
        // when it serves the last good version instead. A file that no longer parses is the
        // exception: its verdict already carries the last good source, which both VMs
        // deferred (see `host::generation`).
        let unparsable = verdict.reason != super::Reason::Registers;
        let same_source = !(file.deferred && verdict.last_good) || unparsable;
        let agrees = loaded && same_source && file.names.as_ref() == Some(&verdict.tools);
        if !agrees {
            if loaded {
                tracing::warn!(
                    "{} registered differently on another VM; its tools run on the first VM only",
                    verdict.shown
                );
            }
            vm.forget_file(file.file_index);
            continue;
        }
        vm.allow_env(file.file_index, &file.env_grants);
    }
}

/// Adopts the file's functions into the VM and builds its registry entries.
fn stage(
    loaded: LoadingFile,
    file_index: u32,
    verdict: &Verdict,
    dir: &ToolDir,
    vm: &mut LuaVm,
) -> Staged {
    let lines: Vec<u32> = loaded.tools.iter().map(|t| t.line).collect();
    let mut entries = Vec::with_capacity(loaded.tools.len());
    let mut env_grants = Vec::new();
    // Hooks act on every call and top-level reads of the world may differ next time: such
    // files always run at load. So do files with resources or prompts: the cache keeps
    // tool records only.
    let plain = loaded.resources.is_empty() && loaded.prompts.is_empty();
    let mut records = (loaded.hooks.is_empty() && !loaded.impure && plain).then(Vec::new);
    let mut shared_checks = Vec::new();
    for (ordinal, tool) in loaded.tools.into_iter().enumerate() {
        let id = |role| LuaFnId::new(file_index, ordinal as u32, role);
        records = records.take().and_then(|mut records| {
            records.push(ToolRecord::of(&tool)?);
            Some(records)
        });
        let handler = vm.adopt(id(FnRole::Handler), tool.handler);
        // The VM finds a handler's `prepare` by the sibling id; the registry needs no field.
        if let Some(prepare) = tool.prepare {
            vm.adopt(id(FnRole::Prepare), prepare);
        }
        env_grants.extend(tool.registration.requires_env.iter().cloned());
        let description = tool
            .description
            .unwrap_or_else(|| default_description(&tool.schema));
        let mut registration = tool.registration;
        registration.scope = registration.scope.or_else(|| dir.scope.clone());
        add_dir_requirements(&mut registration.requires_env, dir);
        entries.push(ToolEntry {
            name: tool.name,
            toolset: tool.toolset,
            schema: tool.schema.into(),
            validator: ParametersValidator::lazy(),
            handler: Handler::Lua(handler),
            check_fn: tool.check_fn.map(|f| {
                let adopted = vm.adopt_shared(id(FnRole::Check), f);
                if adopted != id(FnRole::Check) {
                    shared_checks.resize(ordinal, None);
                    shared_checks.push(Some(adopted));
                }
                Probe::Lua(adopted)
            }),
            description,
            dynamic_schema_overrides: tool
                .dynamic_schema_overrides
                .map(|f| Probe::Lua(vm.adopt(id(FnRole::Overrides), f))),
            output_schema: tool.output_schema,
            registration,
            source: dir.source.clone(),
            file: Some(verdict.path.clone()),
            line: Some(tool.line),
            offline: None,
            effects: None,
        });
    }
    let hooks = loaded
        .hooks
        .into_iter()
        .enumerate()
        .map(|(ordinal, hook)| HookEntry {
            event: hook.event,
            function: vm.adopt(
                LuaFnId::new(file_index, ordinal as u32, FnRole::Hook),
                hook.function,
            ),
            file: verdict.path.clone(),
            line: hook.line,
            source: dir.source.clone(),
            sees_every_call: dir
                .capabilities
                .as_ref()
                .is_none_or(|granted| granted.iter().any(|c| c == "hooks")),
        })
        .collect();
    let origin = |line| Origin {
        source: dir.source.clone(),
        file: verdict.path.clone(),
        line,
    };
    let resources = loaded
        .resources
        .into_iter()
        .enumerate()
        .map(|(ordinal, resource)| {
            let id = |role| LuaFnId::resource(file_index, ordinal as u32, role);
            ResourceEntry {
                uri: resource.uri,
                template: resource.template,
                info: resource.info,
                mime_type: resource.mime_type,
                annotations: resource.annotations,
                read: ContentFn::Lua(vm.adopt(id(FnRole::Read), resource.read)),
                list: resource
                    .list
                    .map(|f| ContentFn::Lua(vm.adopt(id(FnRole::List), f))),
                complete: resource
                    .complete
                    .map(|(f, names)| (ContentFn::Lua(vm.adopt(id(FnRole::Complete), f)), names)),
                origin: origin(resource.line),
            }
        })
        .collect();
    let prompts = loaded
        .prompts
        .into_iter()
        .enumerate()
        .map(|(ordinal, prompt)| {
            let id = |role| LuaFnId::prompt(file_index, ordinal as u32, role);
            PromptEntry {
                info: prompt.info,
                arguments: prompt.arguments,
                render: ContentFn::Lua(vm.adopt(id(FnRole::Read), prompt.render)),
                complete: prompt
                    .complete
                    .map(|(f, names)| (ContentFn::Lua(vm.adopt(id(FnRole::Complete), f)), names)),
                origin: origin(prompt.line),
            }
        })
        .collect();
    Staged {
        entries,
        lines,
        hooks,
        env_grants,
        resources,
        prompts,
        // Recording computed each schema's digest already: the load reuses it.
        digests: records
            .as_ref()
            .map(|records| records.iter().map(|r| r.parameters_digest).collect()),
        cacheable: records.map(|records| {
            shared_checks.resize(records.len(), None);
            (loaded.required, records, shared_checks)
        }),
        deferred: None,
    }
}

/// A cacheable run's records with their shared `check_fn`s named by file and position
/// (positions change when files come and go).
fn with_shared_checks(cacheable: Cacheable, verdicts: &[Verdict]) -> (bool, Vec<ToolRecord>) {
    let (required, mut records, shared) = cacheable;
    for (record, shared) in records.iter_mut().zip(shared) {
        record.check_fn_of = shared.and_then(|id| {
            let owner = verdicts.get(id.file_index() as usize)?;
            Some(SharedCheck {
                file: owner.path.clone(),
                ordinal: id.ordinal(),
            })
        });
    }
    (required, records)
}

/// A cached file's registry entries, built from its records (its functions get the ids
/// its run at first use will adopt them under); `None` when a record is no longer valid
/// (the file then runs at load on every VM).
fn staged_from_cache(
    lazy: &Arc<LazyFile>,
    records: Vec<ToolRecord>,
    schemas: Vec<String>,
    verdict: &Verdict,
    dir: &ToolDir,
) -> Option<Staged> {
    let file_index = lazy.index;
    let mut entries = Vec::with_capacity(records.len());
    let mut env_grants = Vec::new();
    let lines = records.iter().map(|r| r.line).collect();
    let digests = records.iter().map(|r| r.parameters_digest).collect();
    if schemas.len() != records.len() {
        return None;
    }
    for (ordinal, (mut record, schema)) in records.into_iter().zip(schemas).enumerate() {
        let id = |role| LuaFnId::new(file_index, ordinal as u32, role);
        let schema = FunctionSchema::from_text(schema)?;
        let description = match record.description.take() {
            Some(given) => given,
            None => std::mem::take(&mut record.schema_description),
        };
        env_grants.extend(record.registration.requires_env.iter().cloned());
        let (name, toolset) = (record.tool_name()?, record.toolset_name()?);
        let output_schema = record.compiled_output_schema()?;
        let mut registration = record.registration;
        registration.scope = registration.scope.or_else(|| dir.scope.clone());
        add_dir_requirements(&mut registration.requires_env, dir);
        entries.push(ToolEntry {
            name,
            toolset,
            schema,
            validator: ParametersValidator::lazy(),
            handler: Handler::Lua(id(FnRole::Handler)),
            check_fn: record.check_fn.then(|| {
                let shared = lazy.shared_checks.get(ordinal).copied().flatten();
                Probe::Lua(shared.unwrap_or_else(|| id(FnRole::Check)))
            }),
            description,
            dynamic_schema_overrides: record.overrides.then(|| Probe::Lua(id(FnRole::Overrides))),
            output_schema,
            registration,
            source: dir.source.clone(),
            file: Some(verdict.path.clone()),
            line: Some(record.line),
            offline: None,
            effects: None,
        });
    }
    Some(Staged {
        lines,
        entries,
        hooks: Vec::new(),
        env_grants,
        resources: Vec::new(),
        prompts: Vec::new(),
        cacheable: None,
        deferred: Some(lazy.clone()),
        digests: Some(digests),
    })
}

/// Attaches the compiled validators and applies the file to the registry, all or nothing.
/// Functions of a rejected file stay in the VM unreferenced (their ids are never used).
/// What the effects check of a file needs: the analyses, and the source that ran with its
/// `require` folders.
type Judged<'a, 'b> = (&'a mut Effects, (&'b [u8], &'b [SearchDir]));

#[allow(clippy::too_many_arguments)]
fn commit(
    mut file: Staged,
    index: usize,
    compiled: &mut HashMap<(usize, usize), Compiled>,
    verdict: &Verdict,
    vm: &LuaVm,
    state: &mut RegistryState,
    (effects, (source, search)): Judged<'_, '_>,
) -> Result<Vec<String>, LoadError> {
    // Annotations are checked (and filled in) before anything of the file is applied.
    super::effects::judge_file(
        effects,
        &mut file.entries,
        &file.lines,
        verdict,
        source,
        search,
        state,
    )?;
    for (tool, entry) in file.entries.iter_mut().enumerate() {
        let outcome = compiled
            .remove(&(index, tool))
            .unwrap_or_else(|| compile_now(&entry.schema));
        match outcome {
            Ok(validator) => entry.validator = validator,
            Err((field, message)) => {
                let line = file.lines[tool];
                let error = LoadError::new(
                    &verdict.shown,
                    Some(line),
                    format!("register: {field}: {message}"),
                )
                .with_field(Some(field));
                return Err(error);
            }
        }
    }
    let mut names: Vec<String> = file.entries.iter().map(|e| e.name.to_string()).collect();
    // Resources and prompts are judged first, so a refusal leaves nothing of the file behind.
    let content = state
        .judge_content(&file.resources, &file.prompts)
        .map_err(|(line, message)| LoadError::new(&verdict.shown, Some(line), message))?;
    match state.apply(file.entries, file.hooks) {
        Ok(applied) => {
            for warning in applied.warnings.into_iter().chain(content) {
                tracing::warn!("{warning}");
            }
            for name in &applied.shadowed {
                tracing::debug!("library tool '{name}' is shadowed by a tool of the same name");
            }
            names.retain(|name| !applied.shadowed.contains(name));
            state.insert_content(file.resources, file.prompts);
            vm.allow_env(index as u32, &file.env_grants);
            names.dedup();
            Ok(names)
        }
        Err(rejection) => {
            let line = file.lines.get(rejection.index).copied();
            Err(LoadError::new(&verdict.shown, line, rejection.message))
        }
    }
}

/// A pack's `requires_env` joins each of its tools' own (availability reads the union).
fn add_dir_requirements(requires_env: &mut Vec<String>, dir: &ToolDir) {
    for name in &dir.requires_env {
        if !requires_env.contains(name) {
            requires_env.push(name.clone());
        }
    }
}
