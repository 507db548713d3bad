//! A tool's parameters validator, compiled when the tool is first called rather than when
//! it registers: start-up compiles nothing for schemas already known to compile (see
//! `discovery::known_schemas`), and a tool that is never called never pays for its
//! validator (compiled JSON Schemas are the largest part of a loaded tool's memory).

use super::schema::compile_parameters;
use serde_json::{Map, Value};
use std::sync::{Arc, OnceLock};

/// The compiled `parameters` schema of one tool, compiled at most once (docs/calls.md stage 6:
/// "once per tool and generation"). Clones share the compiled validator.
#[derive(Clone, Default)]
pub(crate) struct ParametersValidator(Arc<OnceLock<Option<Arc<jsonschema::Validator>>>>);

impl ParametersValidator {
    /// A validator compiled on first use.
    pub(crate) fn lazy() -> Self {
        Self::default()
    }

    /// A validator already compiled (at registration, when the schema was not known yet).
    pub(crate) fn compiled(validator: Arc<jsonschema::Validator>) -> Self {
        Self(Arc::new(OnceLock::from(Some(validator))))
    }

    /// The validator for `schema` (the tool's function schema), compiling it on first use.
    /// `None` when the parameters do not compile, which registration normally rules out;
    /// arguments are then not validated.
    pub(crate) fn get(&self, schema: &Map<String, Value>) -> Option<&jsonschema::Validator> {
        self.0
            .get_or_init(|| match compile_parameters(schema) {
                Ok(validator) => Some(validator),
                Err(error) => {
                    tracing::warn!("the parameters schema no longer compiles: {error}");
                    None
                }
            })
            .as_deref()
    }

    /// Whether the validator has been compiled.
    pub(crate) fn is_compiled(&self) -> bool {
        self.0.get().is_some()
    }
}

impl std::fmt::Debug for ParametersValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_compiled() {
            "ParametersValidator(compiled)"
        } else {
            "ParametersValidator(lazy)"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(parameters: Value) -> Map<String, Value> {
        json!({ "parameters": parameters })
            .as_object()
            .cloned()
            .unwrap_or_default()
    }

    #[test]
    fn lazy_validator_compiles_on_first_use_and_clones_share_it() {
        let schema = schema(json!({"type": "object", "required": ["a"]}));
        let validator = ParametersValidator::lazy();
        let clone = validator.clone();
        assert!(!clone.is_compiled());
        let compiled = validator.get(&schema).expect("compiles");
        assert!(!compiled.is_valid(&json!({})));
        assert!(clone.is_compiled());
    }

    #[test]
    fn schema_that_does_not_compile_gives_no_validator() {
        let schema = schema(json!({"type": "object", "properties": {"a": {"type": "nope"}}}));
        assert!(ParametersValidator::lazy().get(&schema).is_none());
    }
}
