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
mod judge;
mod known_schemas;
mod load;
mod members;
mod model_facing;
mod prefilter;
mod registrations;
mod shared;
mod stream;
mod toplevel;

pub(crate) use crate::error::LoadError;
use cache::VerdictCache;
pub(crate) use candidates::MAX_FILE_BYTES;
pub(crate) use candidates::absolutize;
pub(crate) use effects::{AnnotationCheck, Digest as ContentDigest, Effects};
pub(crate) use known_schemas::KnownSchemas;
pub(crate) use load::{
    Plan, PlannedEntries, ReplicaFile, Sources, commit_all, load_all, load_replica, plan,
    reconcile_replica, run_all,
};
pub(crate) use registrations::Registrations;
pub(crate) use shared::SharedJudging;

#[cfg(test)]
use crate::lua::depth;
use crate::registry::Source;
use judge::Judgement;
#[cfg(test)]
pub(crate) use judge::PANIC_MARKER as PARSE_PANIC_MARKER;
pub(crate) use judge::PARSER_STACK_BYTES;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
pub(crate) use stream::InOrder;
#[cfg(test)]
use toplevel::ParseVerdict;

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
    /// The digest of `source`, made at its first use ([`Verdict::source_digest`]).
    pub(crate) digest: OnceLock<ContentDigest>,
}

impl Verdict {
    /// The digest of the bytes kept in `source`, made once per load however often it is
    /// asked for (the registration cache's key, the effects check); a file known to
    /// register is digested as it is judged. `source` is set only while the file is
    /// judged (or replaced by a last good version, which clears the digest).
    pub(crate) fn source_digest(&self) -> Option<ContentDigest> {
        let source = self.source.as_deref()?;
        Some(*self.digest.get_or_init(|| ContentDigest::of(source)))
    }

    /// The digest of `bytes`: the one of [`Verdict::source_digest`] when `bytes` are the
    /// kept source itself (not, say, a last good version loaded in its place).
    pub(crate) fn digest_of(&self, bytes: &[u8]) -> ContentDigest {
        let own = self.source.as_deref();
        if own.is_some_and(|own| std::ptr::eq(own, bytes))
            && let Some(digest) = self.source_digest()
        {
            return digest;
        }
        ContentDigest::of(bytes)
    }
}

/// The candidates of a discovery, in load order, and the verdicts of refused directories
/// (which follow them).
pub(crate) struct Found {
    candidates: Vec<candidates::Candidate>,
    refused: Vec<Verdict>,
}

/// Finds every candidate in `dirs` (in load order).
pub(crate) fn find(dirs: &[ToolDir]) -> Found {
    let mut candidates = Vec::new();
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
        candidates.extend(candidates::list(&dir.path, index));
    }
    Found {
        candidates,
        refused,
    }
}

/// At most this many candidates the verdict cache does not know are judged on the caller
/// (each parse on a thread of its own) rather than streamed over the parser threads.
const FEW_UNKNOWN: usize = 2;

impl Found {
    /// Judges every candidate, using and refreshing the verdict cache in `cache_dir` when
    /// given; when the verdict cache knows every candidate, `offer` gets the queue to hand
    /// to a helper (see [`SharedJudging`]: a warm build's preparing thread).
    pub(crate) fn judge_helped(
        self,
        cache_dir: Option<&Path>,
        offer: &dyn Fn(Arc<SharedJudging>),
    ) -> Vec<Verdict> {
        self.judge_offering(cache_dir, Some(offer), |_| ()).0
    }

    /// Judges every candidate while `meanwhile` uses the verdicts in load order as they
    /// come (see [`InOrder`]); returns them all with what `meanwhile` returned. When the
    /// verdict cache knows every candidate nothing is parsed, and they are judged on the
    /// caller first (no thread to start); otherwise on the parser threads. Either way the
    /// verdict cache is written, and the verdicts' problems are logged in load order, once
    /// every candidate is judged and `meanwhile` is done.
    pub(crate) fn judge_while<R>(
        self,
        cache_dir: Option<&Path>,
        meanwhile: impl FnOnce(&(dyn InOrder + Sync)) -> R,
    ) -> (Vec<Verdict>, R) {
        self.judge_offering(cache_dir, None, meanwhile)
    }

    /// [`Found::judge_while`], offering a judging with nothing to parse to a helper.
    fn judge_offering<R>(
        self,
        cache_dir: Option<&Path>,
        offer: Option<&dyn Fn(Arc<SharedJudging>)>,
        meanwhile: impl FnOnce(&(dyn InOrder + Sync)) -> R,
    ) -> (Vec<Verdict>, R) {
        let previous = cache_dir.map(VerdictCache::read).unwrap_or_default();
        let cached: Vec<Option<bool>> = self
            .candidates
            .iter()
            .map(|candidate| judge::cached_verdict(candidate, &previous))
            .collect();
        let unknown = self
            .candidates
            .iter()
            .zip(&cached)
            .filter(|(candidate, cached)| candidate.skip.is_none() && cached.is_none())
            .count();
        // A file that does not parse is never cached: with one in a directory, the cache
        // never knows every candidate, and streaming them all for it started a thread per
        // core at every start. A few unknown ones are judged here instead, each parse on a
        // thread of its own.
        let known = (unknown <= FEW_UNKNOWN).then_some(cached);
        let (judgements, result) = match known {
            Some(known) => {
                // The few unknown ones are never parsed on this stack (`judge_known`).
                let judgements: Vec<Judgement> = match offer {
                    Some(offer) => {
                        let shared = Arc::new(SharedJudging::new(self.candidates, known));
                        offer(Arc::clone(&shared));
                        shared.judge_all()
                    }
                    None => self
                        .candidates
                        .into_iter()
                        .zip(known)
                        .map(|(candidate, cached)| judge::judge_known(candidate, cached))
                        .collect(),
                };
                let result = meanwhile(&judgements);
                (judgements, result)
            }
            None => stream::judge_while(&self.candidates, &previous, meanwhile),
        };
        let mut next = VerdictCache::with_capacity(judgements.len());
        let mut verdicts = Vec::with_capacity(judgements.len() + self.refused.len());
        for Judgement { verdict, remember } in judgements {
            if let Some((stamp, registers)) = remember {
                next.insert(path_text(&verdict.path), stamp, registers);
            }
            verdicts.push(verdict);
        }
        if let Some(dir) = cache_dir {
            next.write_if_changed(&previous, dir);
        }
        // Logged under their own target: commands that print the problems themselves
        // (`check`, `discover`, `watch`) switch it off so each is shown once.
        for error in verdicts.iter().filter_map(|v| v.error.as_ref()) {
            tracing::warn!(target: "toolhost::load", "{error}");
        }
        verdicts.extend(self.refused);
        (verdicts, result)
    }
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
        digest: OnceLock::new(),
    }
}

/// Explicitly named files (for `check FILES`) as candidates; each is attributed to the
/// tool directory that contains it, else to `fallback_dir`.
pub(crate) fn find_files(files: &[PathBuf], dirs: &[ToolDir], fallback_dir: usize) -> Found {
    let candidates = files
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
    Found {
        candidates,
        refused: Vec::new(),
    }
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
        digest: OnceLock::new(),
    };
    match judge::parse_alone(&verdict) {
        ParseVerdict::Registers(_) => (Reason::Registers, None),
        ParseVerdict::NoTopLevelRegister => (Reason::NoTopLevelRegister, None),
        ParseVerdict::ParseError(error) => (Reason::ParseError, Some(error.to_string())),
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
