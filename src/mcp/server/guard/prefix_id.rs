//! The id of a request line that is too long to read: only its first bytes are kept, and
//! the id is usually among them (`{"jsonrpc":"2.0","id":7,"method":…`). Answering the
//! refusal with that id releases the client waiting for it; `null` would not.
//!
//! Only a top-level `id` member counts (one inside `params` does not), and only when the
//! prefix shows the whole envelope up to it and its whole value: a string or a number, as
//! for a complete line. Anything else — not an object, cut off before the id, a member
//! that cannot be read — gives `None` (the answer's id is then `null`). The scan keeps no
//! stack: nesting is counted, so a hostile prefix cannot overflow anything.

use serde_json::Value;

/// The top-level `id` of the JSON object that `prefix` begins, as the client wrote it (raw
/// JSON text), if the prefix shows it whole and it is a string or a number.
pub(crate) fn prefix_id(prefix: &[u8]) -> Option<String> {
    let mut at = skip_space(prefix, 0);
    if prefix.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    loop {
        at = skip_space(prefix, at);
        if prefix.get(at) != Some(&b'"') {
            return None; // `}` (no id), a broken member, or the end of the prefix
        }
        let key_end = string_end(prefix, at)?;
        // Decoded, so an escaped spelling of "id" counts as serde_json would count it.
        let key: String = serde_json::from_slice(&prefix[at..key_end]).ok()?;
        at = skip_space(prefix, key_end);
        if prefix.get(at) != Some(&b':') {
            return None;
        }
        at = skip_space(prefix, at + 1);
        let value_end = value_end(prefix, at)?;
        if key == "id" {
            let raw = &prefix[at..value_end];
            return match serde_json::from_slice::<Value>(raw).ok()? {
                Value::String(_) | Value::Number(_) => String::from_utf8(raw.to_vec()).ok(),
                _ => None,
            };
        }
        at = skip_space(prefix, value_end);
        if prefix.get(at) != Some(&b',') {
            return None;
        }
        at += 1;
    }
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while matches!(bytes.get(at), Some(b' ' | b'\t' | b'\r' | b'\n')) {
        at += 1;
    }
    at
}

/// Where the string starting at `at` (a `"`) ends: just past its closing quote.
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// Where the value starting at `at` ends, if the prefix holds all of it.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => string_end(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while i < bytes.len() {
                match bytes[i] {
                    b'"' => {
                        i = string_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            // A number or a literal: it is whole only if something follows it.
            let end = at
                + bytes[at..]
                    .iter()
                    .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'))?;
            (end > at).then_some(end)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> Option<String> {
        prefix_id(text.as_bytes())
    }

    #[test]
    fn the_top_level_id_is_found_in_a_cut_off_line() {
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"x":"aaa"#).as_deref(),
            Some("7")
        );
        assert_eq!(
            id(r#" { "id" : "a\"b" , "params": [1,2"#).as_deref(),
            Some(r#""a\"b""#)
        );
        assert_eq!(
            id(r#"{"method":"x","params":{"id":1,"s":"}"},"id":18446744073709551616,"#).as_deref(),
            Some("18446744073709551616")
        );
        assert_eq!(id(r#"{"\u0069d":3,"#).as_deref(), Some("3"));
    }

    #[test]
    fn an_id_that_is_not_shown_whole_or_not_top_level_is_none() {
        // Inside params only, and the envelope's own id is beyond the prefix.
        assert_eq!(id(r#"{"params":{"id":1,"text":"aaaa"#), None);
        // A number cut off (could go on), a string cut off.
        assert_eq!(id(r#"{"id":12"#), None);
        assert_eq!(id(r#"{"id":"abc"#), None);
        // Not a string or number, not an object, a batch, garbage.
        assert_eq!(id(r#"{"id":null,"#), None);
        assert_eq!(id(r#"{"id":{"a":1},"#), None);
        assert_eq!(id(r#"[{"id":1,"#), None);
        assert_eq!(id(r#"{"id":01,"#), None);
        assert_eq!(id("{\"id\":"), None);
        assert_eq!(id(""), None);
        // Deep nesting before the id is scanned without recursion.
        let deep = format!("{{\"p\":{}", "[".repeat(100_000));
        assert_eq!(id(&deep), None);
    }
}
