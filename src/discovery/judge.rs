//! One candidate's judgement (docs/discovery.md): read it, the byte prefilter, the verdict
//! cache, the UTF-8 check, the nesting prescan, then the `full_moon` rule. Pure per file:
//! the same steps run one after the other on the caller (a warm start, nothing to parse) or
//! on the parser threads of [`super::stream`] (anything to parse).

use super::cache::{Stamp, VerdictCache};
use super::candidates::{Candidate, MAX_FILE_BYTES};
use super::toplevel::{self, ParseVerdict};
use super::{Reason, Verdict, path_text};
use crate::error::LoadError;
use crate::lua::depth;
use std::sync::Arc;

/// Stack for parser threads: `full_moon` recurses once per nesting level.
pub(crate) const PARSER_STACK_BYTES: usize = 256 * 1024 * 1024;

/// A judged candidate: its verdict, and what the verdict cache should remember of it.
#[derive(Debug)]
pub(super) struct Judgement {
    /// The verdict (its error not yet logged).
    pub verdict: Verdict,
    /// `(stamp, registers)` for the next verdict cache, when the verdict may be cached.
    pub remember: Option<(Stamp, bool)>,
}

/// A path's key in the verdict cache: its text, borrowed when it is UTF-8 (nearly always).
pub(super) fn cache_key(path: &std::path::Path) -> std::borrow::Cow<'_, str> {
    match path.to_str() {
        Some(text) => std::borrow::Cow::Borrowed(text),
        None => std::borrow::Cow::Owned(path_text(path)),
    }
}

/// What the verdict cache says of a candidate: whether it registers, when its stamp still
/// matches.
pub(super) fn cached_verdict(candidate: &Candidate, previous: &VerdictCache) -> Option<bool> {
    let stamp = candidate.stamp?;
    previous.get(&cache_key(&candidate.absolute), stamp)
}

/// A candidate after every step but the parse.
pub(super) enum Prepared {
    /// Judged without parsing (skipped, unreadable, prefilter, cached, bad UTF-8, too deep).
    Judged(Judgement),
    /// Its source (kept in the verdict) must be parsed; the stamp is for the cache.
    Parse(Verdict, Option<Stamp>),
}

/// The verdict of a candidate before any step: no tools, no error, not registering.
pub(super) fn blank(candidate: Candidate) -> Verdict {
    Verdict {
        shown: path_text(&candidate.shown),
        path: candidate.absolute,
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
        digest: Default::default(),
    }
}

/// Every step but the parse. What the prefilter proves is final here: such a file is read
/// once and never parsed.
/// `cached` is the verdict cache's answer for the candidate ([`cached_verdict`]).
pub(super) fn prepare(mut candidate: Candidate, cached: Option<bool>) -> Prepared {
    let skip = candidate.skip.clone();
    let stamp = candidate.stamp;
    let expected_len = candidate.expected_len();
    let in_dir = candidate.in_dir.take();
    let mut verdict = blank(candidate);
    let judged = |verdict, remember| Prepared::Judged(Judgement { verdict, remember });
    if let Some(why) = skip {
        verdict.error = Some(LoadError::new(
            &verdict.shown,
            None,
            format!("skipped: {why}"),
        ));
        return judged(verdict, None);
    }
    // The candidate's metadata showed a regular file of this size (else it was skipped).
    let read = match (expected_len, in_dir) {
        (Some(len), Some(file)) => {
            crate::bounded_read::read_regular_of_len_in(&file.dir, &file.name, len, MAX_FILE_BYTES)
        }
        (Some(len), None) => {
            crate::bounded_read::read_regular_of_len(&verdict.path, len, MAX_FILE_BYTES)
        }
        (None, _) => {
            crate::bounded_read::read_regular(&verdict.path, MAX_FILE_BYTES).map(Arc::from)
        }
    };
    let bytes = match read {
        Ok(bytes) => bytes,
        Err(e) => {
            verdict.reason = Reason::ReadError;
            verdict.error = Some(LoadError::new(
                &verdict.shown,
                None,
                format!("cannot read: {e}"),
            ));
            return judged(verdict, None);
        }
    };
    if let Some(stamp) = stamp
        && let Some(registers) = cached
    {
        verdict.cached = true;
        verdict.registers = registers;
        // The prefilter only names why a cached file does not register (a warm start's
        // registering files are never scanned).
        verdict.reason = match registers {
            true => Reason::Registers,
            false if super::prefilter::may_register(&bytes) => Reason::NoTopLevelRegister,
            false => Reason::Prefilter,
        };
        if registers {
            verdict.source = Some(bytes);
            // Digested here, on whichever thread judges the file (a warm start shares its
            // judging), rather than by the caller alone when it plans the load.
            let _digested = verdict.source_digest();
        }
        return judged(verdict, Some((stamp, registers)));
    }
    if !super::prefilter::may_register(&bytes) {
        verdict.reason = Reason::Prefilter;
        return judged(verdict, stamp.map(|stamp| (stamp, false)));
    }
    if let Err(e) = std::str::from_utf8(&bytes) {
        verdict.reason = Reason::ParseError;
        let message = format!("not valid UTF-8 (at byte {})", e.valid_up_to());
        verdict.error = Some(LoadError::new(&verdict.shown, None, message));
        return judged(verdict, None);
    }
    if let Some(refusal) = depth::prescan(&bytes, depth::MAX_NESTING) {
        verdict.reason = Reason::ParseError;
        verdict.error = Some(LoadError::new(
            &verdict.shown,
            Some(refusal.line()),
            depth::refusal_text(refusal),
        ));
        return judged(verdict, None);
    }
    verdict.source = Some(bytes);
    Prepared::Parse(verdict, stamp)
}

/// Parses a prepared file's source with the `full_moon` rule. Call on a thread with a large
/// stack: the parser recurses once per nesting level.
pub(super) fn parse(verdict: &Verdict) -> ParseVerdict {
    let text = verdict
        .source
        .as_deref()
        .and_then(|b| std::str::from_utf8(b).ok())
        .map(crate::lua::strip_bom_str)
        .unwrap_or("");
    // full_moon can panic on some malformed input (an internal "unreachable"): that is a
    // parse error of the file, never a crash.
    std::panic::catch_unwind(|| {
        #[cfg(test)]
        panic_if_asked(text);
        toplevel::check(&verdict.shown, text)
    })
    .unwrap_or_else(|_| {
        ParseVerdict::ParseError(LoadError::new(
            &verdict.shown,
            None,
            "the Lua parser failed on this file (try `luac -p` on it)",
        ))
    })
}

/// Test hook: a source holding this marker makes the parser step panic, as `full_moon`
/// does on some malformed input (none is known today, so tests need a stand-in).
#[cfg(test)]
pub(crate) const PANIC_MARKER: &str = "--[[toolhost-test: the parser panics here]]";

#[cfg(test)]
fn panic_if_asked(text: &str) {
    if text.contains(PANIC_MARKER) {
        panic!("the parser panics (test hook)");
    }
}

/// A parsed file's judgement: registers (keeping its source and top level), does not, or
/// did not parse (no cache entry: it is parsed again next time, and reports its error).
pub(super) fn settle(
    mut verdict: Verdict,
    stamp: Option<Stamp>,
    outcome: ParseVerdict,
) -> Judgement {
    let mut remember = None;
    match outcome {
        ParseVerdict::Registers(top_level) => {
            verdict.top_level = Some(Arc::new(top_level));
            verdict.registers = true;
            verdict.reason = Reason::Registers;
            remember = stamp.map(|stamp| (stamp, true));
        }
        ParseVerdict::NoTopLevelRegister => {
            verdict.registers = false;
            verdict.reason = Reason::NoTopLevelRegister;
            verdict.source = None;
            remember = stamp.map(|stamp| (stamp, false));
        }
        ParseVerdict::ParseError(error) => {
            verdict.reason = Reason::ParseError;
            verdict.error = Some(error);
            verdict.source = None;
        }
    }
    Judgement { verdict, remember }
}

/// The whole judgement of one candidate, parse included (on a large-stack thread).
pub(super) fn judge_one(candidate: Candidate, previous: &VerdictCache) -> Judgement {
    let cached = cached_verdict(&candidate, previous);
    match prepare(candidate, cached) {
        Prepared::Judged(judgement) => judgement,
        Prepared::Parse(verdict, stamp) => {
            let outcome = parse(&verdict);
            settle(verdict, stamp, outcome)
        }
    }
}

/// The whole judgement of one candidate whose verdict cache answer is `cached`, on any
/// stack: a parse (a file the cache does not know, or whose stamp went stale) runs on a
/// thread of its own ([`parse_alone`]).
pub(super) fn judge_known(candidate: Candidate, cached: Option<bool>) -> Judgement {
    match prepare(candidate, cached) {
        Prepared::Judged(judgement) => judgement,
        Prepared::Parse(verdict, stamp) => {
            let outcome = parse_alone(&verdict);
            settle(verdict, stamp, outcome)
        }
    }
}

/// The verdict of a file whose judgement could not run (no parser thread could start, or
/// the judgement itself failed): a parse error of that file, never a hang.
pub(super) fn unjudged(candidate: Candidate) -> Judgement {
    let mut verdict = blank(candidate);
    verdict.reason = Reason::ParseError;
    verdict.error = Some(LoadError::new(
        &verdict.shown,
        None,
        "the parser could not run",
    ));
    Judgement {
        verdict,
        remember: None,
    }
}

/// Parses one prepared file on a thread of its own with the parser's stack (a warm start
/// whose cached stamp went stale under it; the fuzz tests).
pub(super) fn parse_alone(verdict: &Verdict) -> ParseVerdict {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("toolhost-parse".into())
            .stack_size(PARSER_STACK_BYTES)
            .spawn_scoped(scope, || parse(verdict))
            .ok()
            .and_then(|handle| handle.join().ok())
    })
    .unwrap_or_else(|| {
        ParseVerdict::ParseError(LoadError::new(
            &verdict.shown,
            None,
            "the parser could not run",
        ))
    })
}
