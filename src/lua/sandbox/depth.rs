//! A cheap pre-scan run before any parser sees a file. `full_moon`'s recursive parser has no
//! depth limit (a deep file overflows its thread's stack and aborts the process), and Lua's
//! own parser, though it stops at 200 levels, compiles long `and`/`or` chains in quadratic
//! time with no deadline. Lua refuses more than 200 nested syntactic levels anyway, so a
//! deeper file can never load; refusing it here costs nothing real.
//!
//! What nests (each adds a level while it is open): brackets `( { [`, blocks (`function`,
//! `do`, `if`, `repeat` … `end`/`until`), runs of unary operators (`not not x`, `- - x`,
//! `#`, `~`), and chains of the right-associative operators `..` and `^`. Left-associative
//! chains (`a + b + c`) and call/index chains (`f()()`, `a.b.c`) do not nest in either
//! parser and are not counted, except `and`/`or`, whose count per expression is bounded.
//! The scan understands comments, strings and numbers so that their bytes do not count.

/// Lua's own limit on nested syntactic levels (`LUAI_MAXCCALLS`).
pub(crate) const MAX_NESTING: usize = 200;

/// Most `and`/`or` operators in one expression (Lua compiles a chain in quadratic time:
/// 100,000 take 20 s, this many a few milliseconds).
pub(crate) const MAX_LOGICAL_CHAIN: usize = 5_000;

/// What the pre-scan found that must not reach the parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Nesting exceeds the limit at this line.
    TooDeep(usize),
    /// One expression chains more `and`/`or` operators than [`MAX_LOGICAL_CHAIN`] (line).
    LongLogicalChain(usize),
    /// A backtick outside strings and comments at this line: not Lua, and `full_moon`'s
    /// lexer panics on it.
    Backtick(usize),
}

/// The line where nesting first exceeds `limit`, if it does.
#[cfg(test)]
pub(crate) fn too_deep(src: &[u8], limit: usize) -> Option<usize> {
    match prescan(src, limit) {
        Some(Refusal::TooDeep(line)) => Some(line),
        _ => None,
    }
}

/// Per open bracket or block: the expression state of the level around it.
#[derive(Default, Clone, Copy)]
struct Level {
    /// `..`/`^` operators open in the current expression.
    right_chain: usize,
    /// Consecutive unary operators just read.
    unary_run: usize,
    /// `and`/`or` operators in the current expression.
    logical: usize,
}

struct Scan<'a> {
    src: &'a [u8],
    limit: usize,
    line: usize,
    /// Open brackets and blocks, each holding the state of the level it interrupted.
    outer: Vec<Level>,
    /// Sum of the `right_chain + unary_run` of every level in `outer`.
    outer_chains: usize,
    current: Level,
    /// The last token ends an operand (so `-` and `~` are binary).
    after_operand: bool,
}

impl Scan<'_> {
    fn depth(&self) -> usize {
        self.outer.len() + self.outer_chains + self.current.right_chain + self.current.unary_run
    }

    fn check(&self) -> Result<(), Refusal> {
        if self.depth() > self.limit {
            return Err(Refusal::TooDeep(self.line));
        }
        if self.current.logical > MAX_LOGICAL_CHAIN {
            return Err(Refusal::LongLogicalChain(self.line));
        }
        Ok(())
    }

    fn open(&mut self) -> Result<(), Refusal> {
        self.outer_chains += self.current.right_chain + self.current.unary_run;
        self.outer.push(self.current);
        self.current = Level::default();
        self.after_operand = false;
        self.check()
    }

    fn close(&mut self) {
        if let Some(level) = self.outer.pop() {
            self.outer_chains -= level.right_chain + level.unary_run;
            self.current = level;
        }
        // The bracket (or `end` of a function expression) completes an operand.
        self.operand();
    }

    fn operand(&mut self) {
        self.current.unary_run = 0;
        self.after_operand = true;
    }

    fn unary(&mut self) -> Result<(), Refusal> {
        self.current.unary_run += 1;
        self.after_operand = false;
        self.check()
    }

    fn right_assoc(&mut self) -> Result<(), Refusal> {
        self.current.right_chain += 1;
        self.after_operand = false;
        self.check()
    }

    /// A binary operator that binds looser than `..`: the chains to its left are complete.
    fn loose_binary(&mut self) {
        self.current.right_chain = 0;
        self.after_operand = false;
    }

    /// A new expression starts (after `,`, `;`, `=` or a statement keyword).
    fn new_expression(&mut self) {
        self.current = Level::default();
        self.after_operand = false;
    }

    fn keyword(&mut self, word: &[u8]) -> Result<(), Refusal> {
        match word {
            b"function" | b"do" | b"if" | b"repeat" => self.open(),
            b"end" => {
                self.close();
                Ok(())
            }
            b"until" => {
                self.close();
                self.new_expression();
                Ok(())
            }
            b"not" => self.unary(),
            b"and" | b"or" => {
                self.loose_binary();
                self.current.logical += 1;
                self.check()
            }
            b"local" | b"return" | b"then" | b"else" | b"elseif" | b"while" | b"for" | b"in"
            | b"goto" | b"break" => {
                self.new_expression();
                Ok(())
            }
            _ => {
                // Names, `nil`, `true`, `false`.
                self.operand();
                Ok(())
            }
        }
    }

    fn run(&mut self) -> Result<(), Refusal> {
        let src = self.src;
        let n = src.len();
        let mut i = 0usize;
        while i < n {
            let c = src[i];
            let next = src.get(i + 1).copied();
            match c {
                b'\n' => {
                    self.line += 1;
                    i += 1;
                }
                b'-' if next == Some(b'-') => {
                    i += 2;
                    if let Some(level) = long_bracket(src, i) {
                        i = skip_long(src, i, level, &mut self.line);
                    } else {
                        while i < n && src[i] != b'\n' {
                            i += 1;
                        }
                    }
                }
                b'"' | b'\'' => {
                    i += 1;
                    while i < n && src[i] != c && src[i] != b'\n' {
                        if src[i] == b'\\' {
                            if src.get(i + 1) == Some(&b'\n') {
                                self.line += 1;
                            }
                            i += 1;
                        }
                        i += 1;
                    }
                    i += 1;
                    self.operand();
                }
                b'[' if long_bracket(src, i).is_some() => {
                    let level = long_bracket(src, i).unwrap_or(0);
                    i = skip_long(src, i, level, &mut self.line);
                    self.operand();
                }
                b'(' | b'{' | b'[' => {
                    self.open()?;
                    i += 1;
                }
                b')' | b'}' | b']' => {
                    self.close();
                    i += 1;
                }
                b'`' => return Err(Refusal::Backtick(self.line)),
                b'.' if next == Some(b'.') => {
                    if src.get(i + 2) == Some(&b'.') {
                        self.operand();
                        i += 3;
                    } else {
                        self.right_assoc()?;
                        i += 2;
                    }
                }
                b'.' if next.is_some_and(|d| d.is_ascii_digit()) => i = self.number(i),
                b'^' => {
                    self.right_assoc()?;
                    i += 1;
                }
                b'#' => {
                    self.unary()?;
                    i += 1;
                }
                b'-' | b'~' if !self.after_operand && next != Some(b'=') => {
                    self.unary()?;
                    i += 1;
                }
                b'=' if next == Some(b'=') => {
                    self.loose_binary();
                    i += 2;
                }
                b',' | b';' | b'=' => {
                    self.new_expression();
                    i += 1;
                }
                b'<' | b'>' | b'~' | b'|' | b'&' => {
                    self.loose_binary();
                    i += 1;
                }
                c if c.is_ascii_digit() => i = self.number(i),
                c if c.is_ascii_alphabetic() || c == b'_' => {
                    let start = i;
                    while i < n && (src[i].is_ascii_alphanumeric() || src[i] == b'_') {
                        i += 1;
                    }
                    self.keyword(&src[start..i])?;
                }
                c if c.is_ascii_whitespace() => i += 1,
                _ => {
                    // `+ * / % :` and the rest: no nesting of their own.
                    self.after_operand = false;
                    i += 1;
                }
            }
        }
        Ok(())
    }

    /// Skips a numeral (`3`, `0x1p-4`, `1e+10`, `.5`); returns the index after it.
    fn number(&mut self, mut i: usize) -> usize {
        let src = self.src;
        while i < src.len() {
            let c = src[i];
            let exponent_sign = matches!(c, b'+' | b'-')
                && i > 0
                && matches!(src[i - 1], b'e' | b'E' | b'p' | b'P');
            if c.is_ascii_alphanumeric() || c == b'.' || exponent_sign {
                i += 1;
            } else {
                break;
            }
        }
        self.operand();
        i
    }
}

/// Scans `src` for what no parser must see (see [`Refusal`]).
pub(crate) fn prescan(src: &[u8], limit: usize) -> Option<Refusal> {
    let mut scan = Scan {
        src,
        limit,
        line: 1,
        outer: Vec::new(),
        outer_chains: 0,
        current: Level::default(),
        after_operand: false,
    };
    scan.run().err()
}

impl Refusal {
    /// The line the refusal is about.
    pub(crate) fn line(self) -> u32 {
        match self {
            Self::TooDeep(line) | Self::LongLogicalChain(line) | Self::Backtick(line) => {
                u32::try_from(line).unwrap_or(u32::MAX)
            }
        }
    }
}

/// What is wrong, without the location.
pub(crate) fn refusal_text(refusal: Refusal) -> String {
    match refusal {
        Refusal::TooDeep(_) => format!("nesting too deep (limit {MAX_NESTING})"),
        Refusal::LongLogicalChain(_) => format!(
            "too many chained and/or operators in one expression (limit {MAX_LOGICAL_CHAIN})"
        ),
        Refusal::Backtick(_) => "unexpected '`' (backticks are not Lua)".to_string(),
    }
}

/// `SHOWN:LINE: what is wrong`.
pub(crate) fn refusal_message(shown: &str, refusal: Refusal) -> String {
    format!("{shown}:{}: {}", refusal.line(), refusal_text(refusal))
}

/// At `src[i] == '['`: the level of a long bracket `[==[`, if one opens here.
fn long_bracket(src: &[u8], i: usize) -> Option<usize> {
    if src.get(i) != Some(&b'[') {
        return None;
    }
    let mut j = i + 1;
    while src.get(j) == Some(&b'=') {
        j += 1;
    }
    (src.get(j) == Some(&b'[')).then_some(j - i - 1)
}

/// Skips a long string or comment opening at `i`; returns the index after it closes.
fn skip_long(src: &[u8], i: usize, level: usize, line: &mut usize) -> usize {
    let mut j = i + level + 2;
    while j < src.len() {
        if src[j] == b'\n' {
            *line += 1;
        } else if src[j] == b']' {
            let eqs = src[j + 1..].iter().take_while(|&&b| b == b'=').count();
            if eqs == level && src.get(j + 1 + eqs) == Some(&b']') {
                return j + level + 2;
            }
        }
        j += 1;
    }
    src.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_blocks_and_brackets_but_not_strings_or_comments() {
        let deep = "do ".repeat(300) + &"end ".repeat(300);
        assert_eq!(too_deep(deep.as_bytes(), MAX_NESTING), Some(1));
        let parens = "x = ".to_string() + &"(".repeat(10_000) + "1" + &")".repeat(10_000);
        assert!(too_deep(parens.as_bytes(), MAX_NESTING).is_some());
        let quoted = format!(
            "s = '{}' -- {}\n--[[ {} ]]\nt = [==[ {} ]==]",
            "(".repeat(500),
            "{".repeat(500),
            "do ".repeat(500),
            "[".repeat(500)
        );
        assert_eq!(too_deep(quoted.as_bytes(), MAX_NESTING), None);
        let normal = "for i = 1, 3 do if i then f({a = {b = (1)}}) end end";
        assert_eq!(too_deep(normal.as_bytes(), MAX_NESTING), None);
        assert_eq!(
            prescan(b"x = 1\ny = `z`", MAX_NESTING),
            Some(Refusal::Backtick(2))
        );
        assert_eq!(
            prescan(b"d = 'use `path`' -- `x`\n--[[ `y` ]]", MAX_NESTING),
            None
        );
    }

    #[test]
    fn counts_unary_runs_and_right_associative_chains() {
        for deep in [
            "x = ".to_string() + &"not ".repeat(300) + "y",
            "x = ".to_string() + &"- ".repeat(300) + "y",
            "x = ".to_string() + &"#".repeat(300) + "t",
            "x = ".to_string() + &"~".repeat(300) + "y",
            "x = 'a'".to_string() + &" .. 'a'".repeat(300),
            "x = 2".to_string() + &" ^ 2".repeat(300),
            "x = a".to_string() + &" .. -a".repeat(250),
        ] {
            assert_eq!(
                too_deep(deep.as_bytes(), MAX_NESTING),
                Some(1),
                "{deep:.40}"
            );
        }
    }

    #[test]
    fn left_associative_and_call_chains_and_ordinary_code_pass() {
        for fine in [
            "x = 1".to_string() + &" + 1".repeat(100_000),
            "x = a".to_string() + &" - b".repeat(1_000),
            "x = a".to_string() + &" - -b".repeat(1_000),
            "x = f".to_string() + &"()".repeat(10_000),
            "x = a".to_string() + &".b".repeat(10_000),
            "x = a".to_string() + &":m()".repeat(10_000),
            "x = a".to_string() + &" ~ b".repeat(1_000),
            "x = 'a' .. 'b'\n".repeat(1_000),
            "t = { 'a' .. 'b', 'c' .. 'd' }\n".repeat(1_000),
            "x = 1e-5 - 0x1p-4 - .5 - 3".to_string(),
            "if a ~= b then x = -1 end\nlocal s = ('a'):rep(3) .. ('b'):rep(2)".to_string(),
            "x = a .. b == c .. d and e .. f\n".repeat(200),
        ] {
            assert_eq!(prescan(fine.as_bytes(), MAX_NESTING), None, "{fine:.60}");
        }
    }

    #[test]
    fn bounds_and_or_chains() {
        let long = "x = a".to_string() + &" and a".repeat(MAX_LOGICAL_CHAIN + 1);
        assert_eq!(
            prescan(long.as_bytes(), MAX_NESTING),
            Some(Refusal::LongLogicalChain(1))
        );
        let many = "x = a and b or c\n".repeat(10_000);
        assert_eq!(prescan(many.as_bytes(), MAX_NESTING), None);
    }
}
