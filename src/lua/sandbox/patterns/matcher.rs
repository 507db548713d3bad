//! Lua 5.4's pattern matcher (`lstrlib.c`), ported line for line, plus a step budget: every
//! few thousand steps it asks whether to go on, so a catastrophic pattern stops at the call's
//! deadline instead of pinning the VM inside one C call. Bytes past the end of the subject
//! or pattern read as `0`, as the C code reads the terminating NUL.

/// Most captures in one pattern (`LUA_MAXCAPTURES`).
pub(crate) const MAX_CAPTURES: usize = 32;
/// Deepest recursion of `do_match` (`MAXCCALLS`).
const MAX_DEPTH: usize = 200;
/// Steps between two deadline checks.
const CHECK_EVERY: u32 = 4096;

const ESC: u8 = b'%';
const SPECIALS: &[u8] = b"^$*+?.([%-";

/// A capture's length, or what kind of capture it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CapLen {
    /// Opened, not yet closed.
    Unfinished,
    /// A position capture `()`.
    Position,
    /// A closed capture of this many bytes.
    Len(usize),
}

/// Why matching stopped without an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The pattern is malformed (the message is stock Lua's).
    Error(String),
    /// The budget said stop (the call's deadline passed).
    Stopped,
}

type Step = Result<Option<usize>, Failure>;

fn error<T>(message: impl Into<String>) -> Result<T, Failure> {
    Err(Failure::Error(message.into()))
}

/// One match attempt's state (`MatchState`).
pub(crate) struct MatchState<'a> {
    pub(crate) src: &'a [u8],
    pat: &'a [u8],
    depth: usize,
    pub(crate) level: usize,
    pub(crate) capture: [(usize, CapLen); MAX_CAPTURES],
    steps: u32,
    keep_going: &'a mut dyn FnMut() -> bool,
}

impl<'a> MatchState<'a> {
    /// A state for matching `pat` against `src`; `keep_going` is asked every few thousand
    /// steps and stops the match when it answers false.
    pub(crate) fn new(
        src: &'a [u8],
        pat: &'a [u8],
        keep_going: &'a mut dyn FnMut() -> bool,
    ) -> Self {
        Self {
            src,
            pat,
            depth: MAX_DEPTH,
            level: 0,
            capture: [(0, CapLen::Unfinished); MAX_CAPTURES],
            steps: 0,
            keep_going,
        }
    }

    /// Resets the captures and depth before a new attempt (`reprepstate`).
    pub(crate) fn reset(&mut self) {
        self.depth = MAX_DEPTH;
        self.level = 0;
    }

    fn s_at(&self, i: usize) -> u8 {
        self.src.get(i).copied().unwrap_or(0)
    }

    fn p_at(&self, i: usize) -> u8 {
        self.pat.get(i).copied().unwrap_or(0)
    }

    fn tick(&mut self) -> Result<(), Failure> {
        self.steps += 1;
        if self.steps >= CHECK_EVERY {
            self.steps = 0;
            if !(self.keep_going)() {
                return Err(Failure::Stopped);
            }
        }
        Ok(())
    }

    fn check_capture(&self, l: u8) -> Result<usize, Failure> {
        let l = l as i32 - b'1' as i32;
        if l < 0 || l as usize >= self.level || self.capture[l as usize].1 == CapLen::Unfinished {
            return error(format!("invalid capture index %{}", l + 1));
        }
        Ok(l as usize)
    }

    fn capture_to_close(&self) -> Result<usize, Failure> {
        (0..self.level)
            .rev()
            .find(|&level| self.capture[level].1 == CapLen::Unfinished)
            .map_or_else(|| error("invalid pattern capture"), Ok)
    }

    fn class_end(&self, mut p: usize) -> Result<usize, Failure> {
        let c = self.p_at(p);
        p += 1;
        match c {
            ESC => {
                if p >= self.pat.len() {
                    return error("malformed pattern (ends with '%')");
                }
                Ok(p + 1)
            }
            b'[' => {
                if self.p_at(p) == b'^' {
                    p += 1;
                }
                loop {
                    if p >= self.pat.len() {
                        return error("malformed pattern (missing ']')");
                    }
                    let c = self.p_at(p);
                    p += 1;
                    if c == ESC && p < self.pat.len() {
                        p += 1;
                    }
                    if self.p_at(p) == b']' {
                        break;
                    }
                }
                Ok(p + 1)
            }
            _ => Ok(p),
        }
    }

    fn match_bracket_class(&self, c: u8, mut p: usize, ec: usize) -> bool {
        let mut sig = true;
        if self.p_at(p + 1) == b'^' {
            sig = false;
            p += 1;
        }
        loop {
            p += 1;
            if p >= ec {
                break;
            }
            if self.p_at(p) == ESC {
                p += 1;
                if match_class(c, self.p_at(p)) {
                    return sig;
                }
            } else if self.p_at(p + 1) == b'-' && p + 2 < ec {
                p += 2;
                if self.p_at(p - 2) <= c && c <= self.p_at(p) {
                    return sig;
                }
            } else if self.p_at(p) == c {
                return sig;
            }
        }
        !sig
    }

    fn single_match(&self, s: usize, p: usize, ep: usize) -> bool {
        if s >= self.src.len() {
            return false;
        }
        let c = self.s_at(s);
        match self.p_at(p) {
            b'.' => true,
            ESC => match_class(c, self.p_at(p + 1)),
            b'[' => self.match_bracket_class(c, p, ep - 1),
            other => other == c,
        }
    }

    fn match_balance(&mut self, mut s: usize, p: usize) -> Step {
        if p + 1 >= self.pat.len() {
            return error("malformed pattern (missing arguments to '%b')");
        }
        if self.s_at(s) != self.p_at(p) {
            return Ok(None);
        }
        let (b, e) = (self.p_at(p), self.p_at(p + 1));
        let mut cont = 1;
        loop {
            s += 1;
            if s >= self.src.len() {
                return Ok(None);
            }
            self.tick()?;
            let c = self.s_at(s);
            if c == e {
                cont -= 1;
                if cont == 0 {
                    return Ok(Some(s + 1));
                }
            } else if c == b {
                cont += 1;
            }
        }
    }

    fn max_expand(&mut self, s: usize, p: usize, ep: usize) -> Step {
        let mut i = 0usize;
        while self.single_match(s + i, p, ep) {
            i += 1;
            self.tick()?;
        }
        loop {
            if let Some(res) = self.do_match(s + i, ep + 1)? {
                return Ok(Some(res));
            }
            if i == 0 {
                return Ok(None);
            }
            i -= 1;
        }
    }

    fn min_expand(&mut self, mut s: usize, p: usize, ep: usize) -> Step {
        loop {
            if let Some(res) = self.do_match(s, ep + 1)? {
                return Ok(Some(res));
            }
            if self.single_match(s, p, ep) {
                s += 1;
            } else {
                return Ok(None);
            }
        }
    }

    fn start_capture(&mut self, s: usize, p: usize, what: CapLen) -> Step {
        let level = self.level;
        if level >= MAX_CAPTURES {
            return error("too many captures");
        }
        self.capture[level] = (s, what);
        self.level = level + 1;
        let res = self.do_match(s, p)?;
        if res.is_none() {
            self.level -= 1;
        }
        Ok(res)
    }

    fn end_capture(&mut self, s: usize, p: usize) -> Step {
        let l = self.capture_to_close()?;
        self.capture[l].1 = CapLen::Len(s - self.capture[l].0);
        let res = self.do_match(s, p)?;
        if res.is_none() {
            self.capture[l].1 = CapLen::Unfinished;
        }
        Ok(res)
    }

    fn match_capture(&self, s: usize, l: u8) -> Result<Option<usize>, Failure> {
        let l = self.check_capture(l)?;
        let (init, len) = match self.capture[l] {
            (init, CapLen::Len(len)) => (init, len),
            // A position capture's length is CAP_POSITION (-2) as size_t: never fits.
            _ => return Ok(None),
        };
        if self.src.len() - s >= len && self.src[init..init + len] == self.src[s..s + len] {
            Ok(Some(s + len))
        } else {
            Ok(None)
        }
    }

    /// Matches the pattern from `p` against the subject from `s`: the end of the match.
    pub(crate) fn do_match(&mut self, s: usize, p: usize) -> Step {
        if self.depth == 0 {
            return error("pattern too complex");
        }
        self.depth -= 1;
        self.tick()?;
        let result = self.match_body(s, p);
        self.depth += 1;
        result
    }

    fn match_body(&mut self, mut s: usize, mut p: usize) -> Step {
        loop {
            if p == self.pat.len() {
                return Ok(Some(s));
            }
            match self.p_at(p) {
                b'(' => {
                    return if self.p_at(p + 1) == b')' {
                        self.start_capture(s, p + 2, CapLen::Position)
                    } else {
                        self.start_capture(s, p + 1, CapLen::Unfinished)
                    };
                }
                b')' => return self.end_capture(s, p + 1),
                b'$' if p + 1 == self.pat.len() => {
                    return Ok((s == self.src.len()).then_some(s));
                }
                ESC if self.p_at(p + 1) == b'b' => match self.match_balance(s, p + 2)? {
                    Some(next) => {
                        s = next;
                        p += 4;
                        continue;
                    }
                    None => return Ok(None),
                },
                ESC if self.p_at(p + 1) == b'f' => {
                    p += 2;
                    if self.p_at(p) != b'[' {
                        return error("missing '[' after '%f' in pattern");
                    }
                    let ep = self.class_end(p)?;
                    let previous = if s == 0 { 0 } else { self.s_at(s - 1) };
                    if !self.match_bracket_class(previous, p, ep - 1)
                        && self.match_bracket_class(self.s_at(s), p, ep - 1)
                    {
                        p = ep;
                        continue;
                    }
                    return Ok(None);
                }
                ESC if self.p_at(p + 1).is_ascii_digit() => {
                    match self.match_capture(s, self.p_at(p + 1))? {
                        Some(next) => {
                            s = next;
                            p += 2;
                            continue;
                        }
                        None => return Ok(None),
                    }
                }
                _ => {
                    let ep = self.class_end(p)?;
                    let suffix = self.p_at(ep);
                    if !self.single_match(s, p, ep) {
                        if matches!(suffix, b'*' | b'?' | b'-') {
                            p = ep + 1;
                            continue;
                        }
                        return Ok(None);
                    }
                    match suffix {
                        b'?' => {
                            if let Some(res) = self.do_match(s + 1, ep + 1)? {
                                return Ok(Some(res));
                            }
                            p = ep + 1;
                            continue;
                        }
                        b'+' => return self.max_expand(s + 1, p, ep),
                        b'*' => return self.max_expand(s, p, ep),
                        b'-' => return self.min_expand(s, p, ep),
                        _ => {
                            s += 1;
                            p = ep;
                            continue;
                        }
                    }
                }
            }
        }
    }
}

/// `match_class` of `lstrlib.c` (C locale).
fn match_class(c: u8, cl: u8) -> bool {
    let res = match cl.to_ascii_lowercase() {
        b'a' => c.is_ascii_alphabetic(),
        b'c' => c.is_ascii_control(),
        b'd' => c.is_ascii_digit(),
        b'g' => c.is_ascii_graphic(),
        b'l' => c.is_ascii_lowercase(),
        b'p' => c.is_ascii_punctuation(),
        b's' => matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c),
        b'u' => c.is_ascii_uppercase(),
        b'w' => c.is_ascii_alphanumeric(),
        b'x' => c.is_ascii_hexdigit(),
        b'z' => c == 0,
        _ => return cl == c,
    };
    if cl.is_ascii_lowercase() { res } else { !res }
}

/// True when the pattern has no special characters (a plain search does).
pub(crate) fn no_specials(pat: &[u8]) -> bool {
    !pat.iter().any(|c| SPECIALS.contains(c))
}

/// The first occurrence of `needle` in `haystack` (`lmemfind`).
pub(crate) fn find_plain(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    memchr::memmem::find(haystack, needle)
}

/// `posrelatI`: a 1-based start position, negatives counting from the end.
pub(crate) fn start_position(pos: i64, len: usize) -> usize {
    if pos > 0 {
        pos as usize
    } else if pos == 0 || pos < -(len as i64) {
        1
    } else {
        (len as i64 + pos + 1) as usize
    }
}
