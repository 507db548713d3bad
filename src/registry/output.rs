//! What a tool declares about its results and behaviour for MCP clients: an output schema
//! (table results are checked against it and sent as `structuredContent`) and annotations
//! (`readOnlyHint`, …).

use super::invalid::Invalid;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// A tool's `output_schema`: the JSON Schema (an object schema) and its compiled validator.
#[derive(Debug, Clone)]
pub(crate) struct OutputSchema {
    /// The schema as registered.
    pub schema: Arc<Map<String, Value>>,
    /// Compiled once at registration.
    pub validator: Arc<jsonschema::Validator>,
}

impl OutputSchema {
    /// Checks that `schema` is an object schema (`type = "object"`, as MCP requires of an
    /// `outputSchema`) that compiles; the message names the field.
    pub(crate) fn compile(schema: Map<String, Value>) -> Result<Self, Invalid> {
        match schema.get("type") {
            Some(Value::String(t)) if t == "object" => {}
            other => {
                let got = other.map_or("no type".to_string(), |t| format!("type = {t}"));
                return Err(Invalid::new(format!(
                    "'output_schema' must be a JSON-Schema object (type = \"object\"), got {got}"
                )));
            }
        }
        let validator = jsonschema::validator_for(&Value::Object(schema.clone())).map_err(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() {
                String::new()
            } else {
                format!(" at {at}")
            };
            Invalid::new(format!(
                "'output_schema' is not a valid JSON Schema{at}: {e}"
            ))
        })?;
        Ok(Self {
            schema: Arc::new(schema),
            validator: Arc::new(validator),
        })
    }

    /// `Ok` when `value` matches; otherwise the JSON path of the first mismatch and what
    /// is wrong there.
    pub(crate) fn check(&self, value: &Value) -> Result<(), (String, String)> {
        match self.validator.iter_errors(value).next() {
            None => Ok(()),
            Some(error) => Err((
                super::schema::json_path(&error.instance_path().to_string()),
                error.to_string(),
            )),
        }
    }
}

/// MCP tool annotations (`annotations = {...}` in `registry.register`): hints for clients.
/// A Lua tool's are checked against its effects at load and filled in when left out, and a
/// read-only one is held to it at run time (docs/effects.md). `None` means "not said". (Serialised as the registration cache keeps
/// it: hints not said are left out.)
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Annotations {
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment (`readOnlyHint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// The tool may destroy or overwrite data (`destructiveHint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Calling it again with the same arguments has no further effect (`idempotentHint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// The tool reaches outside the host (network, processes: `openWorldHint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

impl Annotations {
    /// The Lua field names and what each holds, in order (registration check, stubs).
    pub(crate) const FIELDS: &'static [(&'static str, &'static str)] = &[
        ("title", "string"),
        ("read_only", "boolean"),
        ("destructive", "boolean"),
        ("idempotent", "boolean"),
        ("open_world", "boolean"),
    ];

    /// Annotations with a title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Says whether the tool is read-only.
    pub fn with_read_only(mut self, read_only: bool) -> Self {
        self.read_only = Some(read_only);
        self
    }

    /// Says whether the tool may destroy data.
    pub fn with_destructive(mut self, destructive: bool) -> Self {
        self.destructive = Some(destructive);
        self
    }

    /// Says whether repeating a call has no further effect.
    pub fn with_idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = Some(idempotent);
        self
    }

    /// Says whether the tool reaches outside the host.
    pub fn with_open_world(mut self, open_world: bool) -> Self {
        self.open_world = Some(open_world);
        self
    }

    /// True when nothing is said.
    pub(crate) fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The MCP `annotations` object (only the hints that were given).
    pub(crate) fn to_mcp(&self) -> Value {
        let mut out = Map::new();
        if let Some(title) = &self.title {
            out.insert("title".into(), json!(title));
        }
        let hints = [
            ("readOnlyHint", self.read_only),
            ("destructiveHint", self.destructive),
            ("idempotentHint", self.idempotent),
            ("openWorldHint", self.open_world),
        ];
        for (key, hint) in hints {
            if let Some(hint) = hint {
                out.insert(key.into(), json!(hint));
            }
        }
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_schemas_must_be_object_schemas() {
        let not_object = json!({"type": "string"});
        let error = OutputSchema::compile(not_object.as_object().unwrap().clone()).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("'output_schema' must be a JSON-Schema object"),
            "{error}"
        );
    }

    #[test]
    fn mismatches_name_the_path() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        let schema = OutputSchema::compile(schema.as_object().unwrap().clone()).unwrap();
        assert!(schema.check(&json!({"n": 1})).is_ok());
        let (path, _) = schema.check(&json!({"n": "x"})).unwrap_err();
        assert_eq!(path, "$.n");
    }

    #[test]
    fn annotations_become_mcp_hints() {
        let annotations = Annotations::default()
            .with_title("Read")
            .with_read_only(true);
        assert_eq!(
            annotations.to_mcp(),
            json!({"title": "Read", "readOnlyHint": true})
        );
    }
}
