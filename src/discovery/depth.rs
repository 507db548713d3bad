//! A cheap nesting pre-scan run before `full_moon`, whose recursive parser has no depth
//! limit. Lua itself refuses more than 200 nested levels, so a deeper file can never load;
//! rejecting it here keeps a 10,000-deep file from ever reaching the parser. The scan
//! understands comments and strings so that brackets inside them do not count.

/// Lua's own limit on nested syntactic levels (`LUAI_MAXCCALLS`).
pub const MAX_NESTING: usize = 200;

/// What the pre-scan found that must not reach the parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Nesting exceeds the limit at this line.
    TooDeep(usize),
    /// A backtick outside strings and comments at this line: not Lua, and `full_moon`'s
    /// lexer panics on it.
    Backtick(usize),
}

/// The line where nesting first exceeds `limit`, if it does.
#[cfg(test)]
pub fn too_deep(src: &[u8], limit: usize) -> Option<usize> {
    match prescan(src, limit) {
        Some(Refusal::TooDeep(line)) => Some(line),
        _ => None,
    }
}

/// Scans `src` for what the parser must not see (see [`Refusal`]).
pub fn prescan(src: &[u8], limit: usize) -> Option<Refusal> {
    let mut depth = 0usize;
    let mut line = 1usize;
    let mut i = 0usize;
    let n = src.len();
    while i < n {
        let c = src[i];
        match c {
            b'\n' => {
                line += 1;
                i += 1;
            }
            b'-' if src.get(i + 1) == Some(&b'-') => {
                i += 2;
                if let Some(level) = long_bracket(src, i) {
                    i = skip_long(src, i, level, &mut line);
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
                            line += 1;
                        }
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'[' if long_bracket(src, i).is_some() => {
                let level = long_bracket(src, i).unwrap_or(0);
                i = skip_long(src, i, level, &mut line);
            }
            b'(' | b'{' | b'[' => {
                depth += 1;
                if depth > limit {
                    return Some(Refusal::TooDeep(line));
                }
                i += 1;
            }
            b'`' => return Some(Refusal::Backtick(line)),
            b')' | b'}' | b']' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < n && (src[i].is_ascii_alphanumeric() || src[i] == b'_') {
                    i += 1;
                }
                match &src[start..i] {
                    b"function" | b"do" | b"if" | b"repeat" => {
                        depth += 1;
                        if depth > limit {
                            return Some(Refusal::TooDeep(line));
                        }
                    }
                    b"end" | b"until" => depth = depth.saturating_sub(1),
                    _ => {}
                }
            }
            _ => i += 1,
        }
    }
    None
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
}
