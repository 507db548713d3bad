//! A tool's function schema. A warm start takes its tools from the registration cache,
//! where each schema is JSON text; turning every schema into a `serde_json` tree was most
//! of a warm start's work, although one process rarely reads more than a few of them (a
//! `call` reads one; `tools/list` and search read them all, once). So a schema from the
//! cache stays text until it is first read, and is parsed once then.

use super::ParameterTypes;
use serde_json::{Map, Value};
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

/// A function schema (a JSON object), cheap to clone; reads as a
/// `Map<String, Value>`.
#[derive(Clone)]
pub(crate) struct FunctionSchema(Arc<Inner>);

struct Inner {
    /// The cached JSON text, when the schema came from the registration cache.
    text: Option<String>,
    parsed: OnceLock<Map<String, Value>>,
    /// Its `parameters` as coercion reads them, made at the first call.
    parameter_types: OnceLock<ParameterTypes>,
}

impl FunctionSchema {
    /// A schema already parsed.
    pub(crate) fn new(schema: Map<String, Value>) -> Self {
        Self(Arc::new(Inner {
            text: None,
            parsed: OnceLock::from(schema),
            parameter_types: OnceLock::new(),
        }))
    }

    /// A schema kept as JSON `text` until first read; `None` when `text` is clearly not a
    /// JSON object. The text is not parsed here: text that turns out not to parse when the
    /// schema is first read reads as `{}` (with a warning), which only a damaged or forged
    /// cache holds.
    pub(crate) fn from_text(text: String) -> Option<Self> {
        if !(text.starts_with('{') && text.ends_with('}')) {
            return None;
        }
        Some(Self(Arc::new(Inner {
            text: Some(text),
            parsed: OnceLock::new(),
            parameter_types: OnceLock::new(),
        })))
    }

    /// The top-level properties of its `parameters` as argument coercion reads them
    /// (nothing without `parameters`), read at the first call and kept: the schema never
    /// changes.
    pub(crate) fn parameter_types(&self) -> &ParameterTypes {
        self.0.parameter_types.get_or_init(|| {
            self.get("parameters")
                .map(ParameterTypes::of)
                .unwrap_or_default()
        })
    }

    /// Whether the schema has been parsed (always, unless it came from the cache and was
    /// never read).
    #[cfg(test)]
    pub(crate) fn is_parsed(&self) -> bool {
        self.0.parsed.get().is_some()
    }
}

impl Deref for FunctionSchema {
    type Target = Map<String, Value>;

    fn deref(&self) -> &Map<String, Value> {
        self.0.parsed.get_or_init(|| {
            let Some(text) = &self.0.text else {
                return Map::new();
            };
            // The cache's text is what serde_json wrote; only a damaged or forged cache
            // (or a tree deeper than serde_json's nesting limit) fails here.
            serde_json::from_str(text).unwrap_or_else(|error| {
                tracing::warn!("a cached tool schema no longer parses ({error}); it reads as {{}}");
                Map::new()
            })
        })
    }
}

impl fmt::Debug for FunctionSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl From<Map<String, Value>> for FunctionSchema {
    fn from(schema: Map<String, Value>) -> Self {
        Self::new(schema)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> String {
        text.to_string()
    }

    #[test]
    fn a_cached_schema_is_parsed_at_its_first_read_only() {
        let schema = FunctionSchema::from_text(raw(r#"{"description":"Adds.","parameters":{}}"#))
            .expect("an object");
        assert!(!schema.is_parsed());
        assert_eq!(schema.get("description"), Some(&Value::from("Adds.")));
        assert!(schema.is_parsed());
    }

    #[test]
    fn cached_text_that_is_not_an_object_is_no_schema() {
        assert!(FunctionSchema::from_text(raw(r#"["Adds."]"#)).is_none());
        assert!(FunctionSchema::from_text(raw("3")).is_none());
    }

    #[test]
    fn cached_text_that_does_not_parse_reads_as_an_empty_schema() {
        let schema = FunctionSchema::from_text(raw(r#"{"description": }"#)).expect("braces");
        assert!(schema.is_empty());
    }
}
