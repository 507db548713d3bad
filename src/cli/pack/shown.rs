//! Text from a pack or the lock made safe to print: a control character (an escape
//! sequence, a carriage return, a backspace) is shown escaped (`\u{1b}`) instead of reaching
//! the terminal, where it could move the cursor and hide or rewrite the capability list
//! the user is asked about.

use std::borrow::Cow;

/// `text` with every control character escaped (unchanged when it has none).
pub(super) fn shown(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::shown;

    #[test]
    fn control_characters_are_escaped_and_other_text_kept() {
        assert_eq!(shown("Weather tools ☀"), "Weather tools ☀");
        assert_eq!(
            shown("ok\u{1b}[2K\r\u{8}\u{9b}x"),
            "ok\\u{1b}[2K\\r\\u{8}\\u{9b}x"
        );
    }
}
