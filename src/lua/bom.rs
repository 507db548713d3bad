//! A UTF-8 byte-order mark at the start of a Lua file is skipped, as stock Lua's file
//! loader (`luaL_loadfilex`) does: editors on some systems write one, and it is not Lua.

/// The UTF-8 byte-order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// `bytes` without a leading byte-order mark.
pub(crate) fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(BOM).unwrap_or(bytes)
}

/// `text` without a leading byte-order mark.
pub(crate) fn strip_bom_str(text: &str) -> &str {
    text.strip_prefix('\u{FEFF}').unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_leading_mark_is_removed() {
        assert_eq!(strip_bom(b"\xEF\xBB\xBFreturn 1"), b"return 1");
        assert_eq!(
            strip_bom(b"return '\xEF\xBB\xBF'"),
            b"return '\xEF\xBB\xBF'"
        );
        assert_eq!(strip_bom_str("\u{FEFF}x"), "x");
    }
}
