//! Discovery (docs/discovery.md): which files are candidates, which of them register (prefilter,
//! then the `full_moon` top-level rule, with a verdict cache on disk), and loading the
//! registering ones into a VM and the registry, atomically per file.

mod cache;
mod candidates;
mod contained;
mod containment;
mod effects;
mod field_line;
#[cfg(test)]
mod fuzz_tests;
mod known_schemas;
mod load;
mod model_facing;
mod prefilter;
mod registrations;
mod toplevel;

pub(crate) use crate::error::LoadError;
use cache::VerdictCache;
pub(crate) use candidates::MAX_FILE_BYTES;
pub(crate) use candidates::absolutize;
pub(crate) use effects::{AnnotationCheck, Effects};
pub(crate) use known_schemas::KnownSchemas;
pub(crate) use load::{ReplicaFile, Sources, load_all, load_replica, plan, reconcile_replica};
pub(crate) use registrations::Registrations;

use crate::lua::depth;
use crate::registry::Source;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use toplevel::ParseVerdict;

/// Stack for parser threads: `full_moon` recurses once per nesting level.
const PARSER_STACK_BYTES: usize = 256 * 1024 * 1024;

/// A directory of tool files.
#[derive(Debug, Clone)]
pub(crate) struct ToolDir {
    /// The directory as configured.
    pub path: PathBuf,
    /// `builtin` or `plugin:<id>`.
    pub source: Source,
    /// Scope overlay every tool of this directory defaults to (plugins bound to a scope).
    pub scope: Option<String>,
    /// Host-API tables granted; `None` grants everything (built-in directories).
    pub capabilities: Option<Vec<String>>,
    /// Appended to "capability 'X' is not granted" to say how to grant it.
    pub capability_hint: Option<String>,
    /// Why no file of this directory loads (a pack that does not match `toolhost.lock`,
    /// or needs a newer toolhost).
    pub refused: Option<Refused>,
    /// Variables every tool of this directory requires besides its own `requires_env`
    /// (a pack's manifest).
    pub requires_env: Vec<String>,
}

/// A tool directory none of whose files load, and why.
#[derive(Debug, Clone)]
pub(crate) struct Refused {
    /// The file the reason is reported for (a pack's `pack.toml`).
    pub file: PathBuf,
    /// Why.
    pub reason: String,
}

impl ToolDir {
    /// A directory with no scope, no refusal and no extra requirements.
    pub(crate) fn plain(path: PathBuf, source: Source, capabilities: Option<Vec<String>>) -> Self {
        Self {
            path,
            source,
            scope: None,
            capabilities,
            capability_hint: None,
            refused: None,
            requires_env: Vec::new(),
        }
    }

    /// Whether this is the shipped library's folder (written out by the host, not the
    /// user's: `toolhost test` and `watch` leave it alone).
    pub(crate) fn is_library(&self) -> bool {
        self.source == Source::Library
    }
}

/// Why a candidate does or does not register.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The bytes lack `registry` plus `register`/`hook`.
    Prefilter,
    /// Parsed; no top-level registration.
    NoTopLevelRegister,
    /// Has a top-level registration.
    Registers,
    /// Not valid UTF-8, too deeply nested, or not valid Lua 5.4.
    ParseError,
    /// The file could not be read.
    ReadError,
    /// Not a regular file, or larger than 16 MiB.
    Skipped,
}

/// The verdict on one candidate file.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// Absolute, symlink-resolved path.
    pub path: PathBuf,
    /// The path as shown in messages (tool dir as configured + relative path).
    pub shown: String,
    /// Index of its tool directory.
    pub dir_index: usize,
    /// `DIR/PKG` for package tools.
    pub package_dir: Option<PathBuf>,
    /// Whether the file registers (and so is executed).
    pub registers: bool,
    /// Why.
    pub reason: Reason,
    /// The verdict came from the cache.
    pub cached: bool,
    /// The parse, read, load or registration error.
    pub error: Option<LoadError>,
    /// Names of the tools this file registered.
    pub tools: Vec<String>,
    /// The file failed and its tools come from its last good version (hot reload).
    pub last_good: bool,
    /// The bytes, kept (shared) while the VMs load registering files.
    pub(crate) source: Option<Arc<[u8]>>,
    /// What its top level does beyond registering, when it was parsed by this discovery
    /// (a cached verdict is not parsed; see `contained`).
    pub(crate) top_level: Option<Arc<contained::TopLevel>>,
}

/// Judges every candidate in `dirs` (in load order), using and refreshing the verdict
/// cache in `cache_dir` when given.
pub(crate) fn discover(dirs: &[ToolDir], cache_dir: Option<&Path>) -> Vec<Verdict> {
    let mut found = Vec::new();
    let mut refused = Vec::new();
    for (index, dir) in dirs.iter().enumerate() {
        if let Some(why) = &dir.refused {
            refused.push(refused_verdict(why, index));
            continue;
        }
        if !dir.path.is_dir() {
            tracing::warn!("tool directory {} does not exist", dir.path.display());
            continue;
        }
        found.extend(candidates::list(&dir.path, index));
    }
    let mut verdicts = judge(found, cache_dir);
    verdicts.extend(refused);
    verdicts
}

/// The verdict standing for a refused directory: its file (`pack.toml`), with the reason.
fn refused_verdict(refused: &Refused, dir_index: usize) -> Verdict {
    let shown_path = &refused.file;
    let shown = path_text(shown_path);
    let error = LoadError::new(&shown, None, &refused.reason);
    // Logged like every load problem (commands that print them switch this target off).
    tracing::warn!(target: "toolhost::load", "{error}");
    Verdict {
        path: candidates::absolutize(shown_path),
        shown,
        dir_index,
        package_dir: None,
        registers: false,
        reason: Reason::Skipped,
        cached: false,
        error: Some(error),
        tools: Vec::new(),
        last_good: false,
        source: None,
        top_level: None,
    }
}

/// Judges explicitly named files (for `check FILES`); each is attributed to the tool
/// directory that contains it, else to `fallback_dir`.
pub(crate) fn discover_files(
    files: &[PathBuf],
    dirs: &[ToolDir],
    fallback_dir: usize,
    cache_dir: Option<&Path>,
) -> Vec<Verdict> {
    let found = files
        .iter()
        .map(|file| {
            let absolute = file
                .canonicalize()
                .unwrap_or_else(|_| candidates::absolutize(file));
            let dir_index = dirs
                .iter()
                .position(|d| {
                    d.path
                        .canonicalize()
                        .is_ok_and(|dir| absolute.starts_with(dir))
                })
                .unwrap_or(fallback_dir);
            let package_dir = (file.file_name().is_some_and(|n| n == "tool.lua"))
                .then(|| file.parent().map(Path::to_path_buf))
                .flatten();
            candidates::Candidate::new(dir_index, file.clone(), absolute, package_dir)
        })
        .collect();
    judge(found, cache_dir)
}

fn judge(found: Vec<candidates::Candidate>, cache_dir: Option<&Path>) -> Vec<Verdict> {
    let previous = cache_dir.map(VerdictCache::read).unwrap_or_default();
    let mut next = VerdictCache::default();
    let mut verdicts: Vec<Verdict> = Vec::with_capacity(found.len());
    let mut to_parse: Vec<usize> = Vec::new();
    let mut parse_stamps: Vec<Option<cache::Stamp>> = Vec::new();
    for candidate in found {
        let key = path_text(&candidate.absolute);
        let mut verdict = Verdict {
            path: candidate.absolute,
            shown: path_text(&candidate.shown),
            dir_index: candidate.dir_index,
            package_dir: candidate.package_dir,
            registers: false,
            reason: Reason::Skipped,
            cached: false,
            error: None,
            tools: Vec::new(),
            last_good: false,
            source: None,
            top_level: None,
        };
        if let Some(why) = candidate.skip {
            verdict.error = Some(LoadError::new(
                &verdict.shown,
                None,
                format!("skipped: {why}"),
            ));
            verdicts.push(verdict);
            continue;
        }
        let stamp = candidate.stamp;
        let bytes = match crate::bounded_read::read_regular(&verdict.path, MAX_FILE_BYTES) {
            Ok(bytes) => bytes,
            Err(e) => {
                verdict.reason = Reason::ReadError;
                verdict.error = Some(LoadError::new(
                    &verdict.shown,
                    None,
                    format!("cannot read: {e}"),
                ));
                verdicts.push(verdict);
                continue;
            }
        };
        let may_register = prefilter::may_register(&bytes);
        if let Some(stamp) = stamp
            && let Some(registers) = previous.get(&key, stamp)
        {
            next.insert(key, stamp, registers);
            verdict.cached = true;
            verdict.registers = registers;
            verdict.reason = match (registers, may_register) {
                (true, _) => Reason::Registers,
                (false, false) => Reason::Prefilter,
                (false, true) => Reason::NoTopLevelRegister,
            };
            if registers {
                verdict.source = Some(bytes.into());
            }
            verdicts.push(verdict);
            continue;
        }
        if !may_register {
            if let Some(stamp) = stamp {
                next.insert(key, stamp, false);
            }
            verdict.reason = Reason::Prefilter;
            verdicts.push(verdict);
            continue;
        }
        if let Err(e) = std::str::from_utf8(&bytes) {
            verdict.reason = Reason::ParseError;
            let message = format!("not valid UTF-8 (at byte {})", e.valid_up_to());
            verdict.error = Some(LoadError::new(&verdict.shown, None, message));
            verdicts.push(verdict);
            continue;
        }
        if let Some(refusal) = depth::prescan(&bytes, depth::MAX_NESTING) {
            verdict.reason = Reason::ParseError;
            verdict.error = Some(LoadError::new(
                &verdict.shown,
                Some(refusal.line()),
                depth::refusal_text(refusal),
            ));
            verdicts.push(verdict);
            continue;
        }
        verdict.source = Some(bytes.into());
        to_parse.push(verdicts.len());
        parse_stamps.push(stamp);
        verdicts.push(verdict);
    }

    let parsed = parse_all(&verdicts, &to_parse);
    for ((index, outcome), stamp) in to_parse.into_iter().zip(parsed).zip(parse_stamps) {
        let verdict = &mut verdicts[index];
        let key = path_text(&verdict.path);
        match outcome {
            ParseVerdict::Registers(_) | ParseVerdict::NoTopLevelRegister => {
                let registers = matches!(outcome, ParseVerdict::Registers(_));
                if let ParseVerdict::Registers(top_level) = outcome {
                    verdict.top_level = Some(Arc::new(top_level));
                }
                verdict.registers = registers;
                verdict.reason = if registers {
                    Reason::Registers
                } else {
                    verdict.source = None;
                    Reason::NoTopLevelRegister
                };
                if let Some(stamp) = stamp {
                    next.insert(key, stamp, registers);
                }
            }
            ParseVerdict::ParseError(error) => {
                verdict.reason = Reason::ParseError;
                verdict.error = Some(error);
                verdict.source = None;
            }
        }
    }
    if let Some(dir) = cache_dir {
        next.write_if_changed(&previous, dir);
    }
    // Logged under their own target: commands that print the problems themselves
    // (`check`, `discover`, `watch`) switch it off so each is shown once.
    for error in verdicts.iter().filter_map(|v| v.error.as_ref()) {
        tracing::warn!(target: "toolhost::load", "{error}");
    }
    verdicts
}

/// The verdict discovery gives `bytes` (prefilter, UTF-8, the nesting guard, then the
/// `full_moon` rule on a large-stack thread), without touching the filesystem; `shown`
/// names the file in messages. For fuzzing.
#[cfg(test)]
pub(crate) fn classify(shown: &str, bytes: &[u8]) -> (Reason, Option<String>) {
    if !prefilter::may_register(bytes) {
        return (Reason::Prefilter, None);
    }
    if let Err(e) = std::str::from_utf8(bytes) {
        return (
            Reason::ParseError,
            Some(format!(
                "{shown}: not valid UTF-8 (at byte {})",
                e.valid_up_to()
            )),
        );
    }
    if let Some(refusal) = depth::prescan(bytes, depth::MAX_NESTING) {
        return (
            Reason::ParseError,
            Some(depth::refusal_message(shown, refusal)),
        );
    }
    let verdict = Verdict {
        path: PathBuf::from(shown),
        shown: shown.to_string(),
        dir_index: 0,
        package_dir: None,
        registers: false,
        reason: Reason::Registers,
        cached: false,
        error: None,
        tools: Vec::new(),
        last_good: false,
        source: Some(bytes.into()),
        top_level: None,
    };
    match parse_all(std::slice::from_ref(&verdict), &[0]).pop() {
        Some(ParseVerdict::Registers(_)) => (Reason::Registers, None),
        Some(ParseVerdict::NoTopLevelRegister) => (Reason::NoTopLevelRegister, None),
        Some(ParseVerdict::ParseError(error)) => (Reason::ParseError, Some(error.to_string())),
        None => (
            Reason::ParseError,
            Some(format!("{shown}: the parser could not run")),
        ),
    }
}

/// A path as text: its own bytes when they are UTF-8 (nearly always), else the lossy
/// `display` form. `Path::display` formats through the lossy decoder one chunk at a time, a
/// visible cost when done for every file of every start.
pub(crate) fn path_text(path: &Path) -> String {
    match path.to_str() {
        Some(text) => text.to_string(),
        None => path.display().to_string(),
    }
}

/// Parses the selected files on a few large-stack threads (never on the caller's stack,
/// which may be a small async worker stack).
fn parse_all(verdicts: &[Verdict], indexes: &[usize]) -> Vec<ParseVerdict> {
    if indexes.is_empty() {
        return Vec::new();
    }
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(indexes.len());
    let next = AtomicUsize::new(0);
    let results: Vec<parking_lot::Mutex<Option<ParseVerdict>>> = indexes
        .iter()
        .map(|_| parking_lot::Mutex::new(None))
        .collect();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let spawned = std::thread::Builder::new()
                .name("toolhost-parse".into())
                .stack_size(PARSER_STACK_BYTES)
                .spawn_scoped(scope, || {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&index) = indexes.get(i) else { break };
                        let verdict = &verdicts[index];
                        let text = verdict
                            .source
                            .as_deref()
                            .and_then(|b| std::str::from_utf8(b).ok())
                            .map(crate::lua::strip_bom_str)
                            .unwrap_or("");
                        // full_moon can panic on some malformed input (an internal
                        // "unreachable"): that is a parse error of the file, never a crash.
                        let outcome =
                            std::panic::catch_unwind(|| toplevel::check(&verdict.shown, text))
                                .unwrap_or_else(|_| {
                                    ParseVerdict::ParseError(LoadError::new(
                                        &verdict.shown,
                                        None,
                                        "the Lua parser failed on this file (try `luac -p` on it)",
                                    ))
                                });
                        *results[i].lock() = Some(outcome);
                    }
                });
            if let Err(e) = spawned {
                tracing::warn!("cannot start a parser thread: {e}");
            }
        }
    });
    results
        .into_iter()
        .zip(indexes)
        .map(|(slot, &index)| {
            slot.into_inner().unwrap_or_else(|| {
                ParseVerdict::ParseError(LoadError::new(
                    &verdicts[index].shown,
                    None,
                    "the parser could not run",
                ))
            })
        })
        .collect()
}
