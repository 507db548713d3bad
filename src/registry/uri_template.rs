//! RFC 6570 level 1 URI templates (`notes://{id}`), plus level 2's reserved expansion
//! (`file:///{+path}`): what `registry.resource{uri = ...}` accepts as a template and how a
//! concrete URI is matched against one. A simple expansion percent-encodes every reserved
//! character, so a variable's value never contains the literal that follows it; a reserved
//! one keeps `/` (a path), never `?` or `#`.

use super::invalid::Invalid;

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    /// Literal text, matched exactly.
    Literal(String),
    /// `{name}` (or `{+name}` when the flag is set, which may hold `/`): a non-empty run
    /// of characters up to the next literal.
    Var(String, bool),
}

/// The variables a template matched in a URI, by name, percent-decoded.
pub(crate) type Params = Vec<(String, String)>;

/// A parsed level-1 template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UriTemplate {
    parts: Vec<Part>,
}

/// The longest URI or template accepted (a registration is not a place for data).
const MAX_URI: usize = 2048;

/// Checks a registered URI or template given as `field`: non-empty, at most 2 KiB, no
/// spaces, a scheme; `Some` template when it has `{variables}`. The messages name `field`.
pub(crate) fn check_uri(uri: &str, field: &str) -> Result<Option<UriTemplate>, String> {
    if uri.is_empty() || uri.len() > MAX_URI || uri.chars().any(char::is_whitespace) {
        return Err(format!(
            "'{field}' must be a non-empty URI of at most {MAX_URI} bytes without spaces"
        ));
    }
    if !uri.contains(':') {
        return Err(format!(
            "'{field}' {uri:?} has no scheme (like notes://...)"
        ));
    }
    UriTemplate::parse(uri).map_err(|e| format!("'{field}': {e}"))
}

/// The most variables a template may hold (a hostile file cannot make matching costly).
const MAX_VARS: usize = 16;

impl UriTemplate {
    /// Parses `text`; `None` when it has no `{var}` (a fixed URI).
    pub(crate) fn parse(text: &str) -> Result<Option<Self>, Invalid> {
        let mut parts = Vec::new();
        let mut rest = text;
        let mut vars = 0;
        while let Some(open) = rest.find(['{', '}']) {
            if rest[open..].starts_with('}') {
                return Err(Invalid::new(format!("unbalanced '}}' in {text:?}")));
            }
            let close = rest[open..]
                .find('}')
                .map(|c| open + c)
                .ok_or_else(|| Invalid::new(format!("unclosed '{{' in {text:?}")))?;
            let inner = &rest[open + 1..close];
            let (name, reserved) = match inner.strip_prefix('+') {
                Some(name) => (name, true),
                None => (inner, false),
            };
            let simple = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
            if !simple {
                return Err(Invalid::new(format!(
                    "template variable {{{inner}}} in {text:?}: only {{name}} and {{+name}} \
                     variables are supported"
                )));
            }
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_string()));
            } else if matches!(parts.last(), Some(Part::Var(..))) {
                return Err(Invalid::new(format!(
                    "{text:?}: two variables need literal text between them"
                )));
            }
            if parts
                .iter()
                .any(|p| matches!(p, Part::Var(seen, _) if seen == name))
            {
                return Err(Invalid::new(format!(
                    "{text:?}: variable {{{name}}} appears twice"
                )));
            }
            parts.push(Part::Var(name.to_string(), reserved));
            vars += 1;
            rest = &rest[close + 1..];
        }
        if vars > MAX_VARS {
            return Err(Invalid::new(format!(
                "{text:?}: more than {MAX_VARS} variables"
            )));
        }
        if vars == 0 {
            return Ok(None);
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_string()));
        }
        Ok(Some(Self { parts }))
    }

    /// The variable names, in order.
    pub(crate) fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(name, _) => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// The variables' (percent-decoded) values when `uri` is an expansion of this
    /// template; `None` otherwise. Matching is left to right, each variable taking the
    /// shortest run that lets the next literal match (values never hold that literal).
    pub(crate) fn matches(&self, uri: &str) -> Option<Params> {
        let mut rest = uri;
        let mut values = Vec::new();
        let mut parts = self.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                Part::Literal(text) => rest = rest.strip_prefix(text.as_str())?,
                Part::Var(name, reserved) => {
                    let end = match parts.peek() {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let raw = &rest[..end];
                    // A level-1 value has its reserved characters encoded: a raw '/'
                    // belongs to another path, not to this variable. A reserved one
                    // keeps '/' but never holds a query or a fragment.
                    let stops: &[char] = if *reserved {
                        &['?', '#']
                    } else {
                        &['/', '?', '#']
                    };
                    if raw.is_empty() || raw.contains(stops) {
                        return None;
                    }
                    let value = percent_decode(raw)?;
                    values.push((name.clone(), value));
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(values)
    }
}

fn percent_decode(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = raw.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::UriTemplate;

    fn template(text: &str) -> UriTemplate {
        UriTemplate::parse(text)
            .ok()
            .flatten()
            .unwrap_or_else(|| panic!("{text} should be a template"))
    }

    #[test]
    fn a_uri_without_variables_is_fixed() {
        assert!(matches!(UriTemplate::parse("notes://all"), Ok(None)));
    }

    #[test]
    fn variables_match_and_decode() {
        let t = template("notes://{id}/v{version}");
        assert_eq!(
            t.matches("notes://a%20b/v2"),
            Some(vec![
                ("id".to_string(), "a b".to_string()),
                ("version".to_string(), "2".to_string())
            ])
        );
        assert_eq!(t.matches("notes://a/b/v2"), None);
        assert_eq!(t.matches("notes:///v2"), None);
        assert_eq!(t.matches("other://a/v2"), None);
        assert_eq!(t.matches("notes://a/v2/x"), None);
    }

    #[test]
    fn a_reserved_variable_keeps_slashes_but_no_query() {
        let t = template("file:///{+path}");
        assert_eq!(
            t.matches("file:///home/a%20b/c.rs"),
            Some(vec![("path".to_string(), "home/a b/c.rs".to_string())])
        );
        assert_eq!(t.matches("file:///a?b"), None);
        assert_eq!(t.matches("file:///"), None);
    }

    #[test]
    fn malformed_templates_are_refused() {
        for bad in [
            "a://{",
            "a://}",
            "a://{}",
            "a://{#x}",
            "a://{x}{y}",
            "a://{x}/{x}",
        ] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
    }
}
