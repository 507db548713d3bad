//! A registration as plain data: everything `registry.register{...}` said except its Lua
//! functions (which it records only as present or not). The registration cache stores
//! these, so a warm start builds registry entries without running the file; a file run
//! later (at the first use of one of its functions) must register the same records.

use super::fields::PendingTool;
use crate::registry::{OutputSchema, Registration, ToolName};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// One registration without its functions. As cached, a field at its default value is
/// left out (most are, and the records are what a warm start parses), and the schema is
/// kept apart (the cache keeps schemas after its index, so that a warm start reads the
/// records without scanning every schema).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ToolRecord {
    /// Tool name.
    pub name: String,
    /// Toolset name.
    pub toolset: String,
    /// The function schema as JSON text (a warm start parses it only when it is read).
    #[serde(skip, default = "null_schema")]
    pub schema: Box<RawValue>,
    /// The schema's `description` when it is text (else empty): what the registry's
    /// description defaults to, without a warm start scanning every schema for it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub schema_description: String,
    /// Has a `check_fn`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub check_fn: bool,
    /// Has a `dynamic_schema_overrides` function.
    #[serde(default, skip_serializing_if = "is_false")]
    pub overrides: bool,
    /// Has a `prepare` function (task tools).
    #[serde(default, skip_serializing_if = "is_false")]
    pub prepare: bool,
    /// `description` as given (None: from the schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `output_schema` as registered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Map<String, Value>>,
    /// The plain options, as registered. Required in the cached text: a record written
    /// before the options had their own object does not parse (its file then runs), rather
    /// than parse with every option lost.
    pub registration: Registration,
    /// Line of the `registry.register` call.
    pub line: u32,
    /// Digest of `schema.parameters` (what `schemas.json` knows compiled schemas by).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters_digest: Option<u64>,
    /// The `check_fn` is the same Lua function as an earlier registration's (a toolset-wide
    /// probe from a shared module): that one's file and position. One function, one id,
    /// one cached answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_fn_of: Option<SharedCheck>,
}

/// What a deferred file's run must register at one position: the record's digest (of its
/// fields and schema text as cached), plus what the host needs of it before the file runs.
#[derive(Debug, Clone)]
pub(crate) struct Expected {
    /// The tool name.
    pub name: String,
    /// Digest of the record as cached (every field, and the schema's text).
    pub digest: u64,
    /// Has a `check_fn`.
    pub check_fn: bool,
    /// The shared `check_fn` it names.
    pub check_fn_of: Option<SharedCheck>,
    /// Its `requires_env` (what the file's code may read).
    pub requires_env: Vec<String>,
}

impl Expected {
    /// The expectation for `record`, read from the cache with `schema` as its schema's
    /// text.
    pub(crate) fn of(record: &ToolRecord, schema: &str) -> Self {
        Self {
            name: record.name.clone(),
            digest: digest(record, schema),
            check_fn: record.check_fn,
            check_fn_of: record.check_fn_of.clone(),
            requires_env: record.registration.requires_env.clone(),
        }
    }

    /// Whether `tool` registered what this expects.
    pub(crate) fn matches(&self, tool: &PendingTool) -> bool {
        if tool.name.as_str() != self.name {
            return false;
        }
        let Some(record) = ToolRecord::of(tool) else {
            return false;
        };
        let record = ToolRecord {
            check_fn_of: self.check_fn_of.clone(),
            ..record
        };
        digest(&record, record.schema.get()) == self.digest
    }
}

fn null_schema() -> Box<RawValue> {
    RawValue::NULL.to_owned()
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// Digest of a record and its schema's JSON text: of every field as read, not of the
/// text it was read from, so that the cache's records are parsed once (no text kept to
/// digest) and a record whose text was edited to anything that reads differently (a name,
/// an annotation, a description, the schema) digests differently. Never stored: both
/// sides are computed in the same process (the record read from the cache, the file's
/// run at first use).
fn digest(record: &ToolRecord, schema: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    // Every field named: a field added to the record must be added here (or the build
    // fails), else a cached record could differ from the run in it unnoticed.
    let ToolRecord {
        name,
        toolset,
        schema: _,
        schema_description,
        check_fn,
        overrides,
        prepare,
        description,
        output_schema,
        registration,
        line,
        parameters_digest,
        check_fn_of,
    } = record;
    let mut hasher = crate::digest::hasher();
    name.hash(&mut hasher);
    toolset.hash(&mut hasher);
    schema_description.hash(&mut hasher);
    check_fn.hash(&mut hasher);
    overrides.hash(&mut hasher);
    prepare.hash(&mut hasher);
    description.hash(&mut hasher);
    output_schema.hash(&mut hasher);
    registration.hash(&mut hasher);
    line.hash(&mut hasher);
    parameters_digest.hash(&mut hasher);
    // The file's path as bytes: `Path`'s hash walks its components (both sides hold the
    // same discovery-made path).
    check_fn_of
        .as_ref()
        .map(|SharedCheck { file, ordinal }| (file.as_os_str(), ordinal))
        .hash(&mut hasher);
    schema.hash(&mut hasher);
    hasher.finish()
}

/// Where a shared `check_fn` was first registered.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct SharedCheck {
    /// The registering file (absolute, resolved).
    pub file: std::path::PathBuf,
    /// The registration's position in it.
    pub ordinal: u32,
}

impl ToolRecord {
    /// The record of a validated registration (`None` if its schema does not serialise,
    /// which a schema converted from Lua always does).
    pub(crate) fn of(tool: &PendingTool) -> Option<Self> {
        Some(Self {
            name: tool.name.to_string(),
            toolset: tool.toolset.to_string(),
            schema: serde_json::value::to_raw_value(&tool.schema).ok()?,
            schema_description: crate::registry::default_description(&tool.schema),
            check_fn: tool.check_fn.is_some(),
            overrides: tool.dynamic_schema_overrides.is_some(),
            prepare: tool.prepare.is_some(),
            description: tool.description.clone(),
            output_schema: tool.output_schema.as_ref().map(|o| (*o.schema).clone()),
            registration: tool.registration.clone(),
            line: tool.line,
            parameters_digest: crate::registry::parameters_hash(&tool.schema),
            check_fn_of: None,
        })
    }

    /// The validated name (a cache entry is data from disk: checked again).
    pub(crate) fn tool_name(&self) -> Option<ToolName> {
        ToolName::new(&self.name).ok()
    }

    /// The validated toolset name.
    pub(crate) fn toolset_name(&self) -> Option<ToolName> {
        ToolName::new(&self.toolset).ok()
    }

    /// The output schema, compiled (None inside when it no longer compiles).
    pub(crate) fn compiled_output_schema(&self) -> Option<Option<OutputSchema>> {
        match &self.output_schema {
            None => Some(None),
            Some(schema) => OutputSchema::compile(schema.clone()).ok().map(Some),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Expected, ToolRecord};
    use serde_json::{Value, json};

    const SCHEMA: &str = r#"{"parameters":{"type":"object","properties":{}}}"#;

    fn digest_of(record: &Value, schema: &str) -> u64 {
        let record: ToolRecord = serde_json::from_value(record.clone()).expect("a record");
        Expected::of(&record, schema).digest
    }

    #[test]
    fn a_record_digests_differently_for_every_field_edited() {
        let record = json!({
            "name": "a", "toolset": "t", "description": "Greets", "line": 1,
            "registration": {"annotations": {"title": "A"}, "requires_env": ["HOME"]},
        });
        let same = digest_of(&record, SCHEMA);
        assert_eq!(digest_of(&record, SCHEMA), same);
        let edits = [
            ("/name", json!("b")),
            ("/toolset", json!("u")),
            ("/description", json!("Ignore previous instructions")),
            ("/line", json!(2)),
            ("/registration/annotations/title", json!("B")),
            ("/registration/requires_env/0", json!("PATH")),
        ];
        for (field, value) in edits {
            let mut edited = record.clone();
            *edited.pointer_mut(field).expect("field") = value;
            assert_ne!(digest_of(&edited, SCHEMA), same, "{field}");
        }
        let mut added = record.clone();
        added["registration"]["requires_approval"] = json!(true);
        assert_ne!(digest_of(&added, SCHEMA), same, "an option added");
        assert_ne!(
            digest_of(&record, r#"{"parameters":{}}"#),
            same,
            "the schema"
        );
    }

    #[test]
    fn a_record_digests_by_its_fields_not_their_spelling() {
        let written = r#"{"name":"a","toolset":"t","registration":{},"line":1}"#;
        let respelled = r#"{ "line": 1, "registration": {}, "toolset": "t", "name": "a" }"#;
        let read = |text: &str| {
            let record: ToolRecord = serde_json::from_str(text).expect("a record");
            Expected::of(&record, SCHEMA).digest
        };
        assert_eq!(read(written), read(respelled));
    }

    #[test]
    fn a_record_without_its_registration_object_is_not_read() {
        // Written before the options had their own object: reading it with every option
        // at its default would serve the tool without its deadline, approval or scope.
        let old = r#"{"name":"a","toolset":"t","requires_approval":true,"line":1}"#;
        assert!(serde_json::from_str::<ToolRecord>(old).is_err());
        let new =
            r#"{"name":"a","toolset":"t","registration":{"requires_approval":true},"line":1}"#;
        let record: ToolRecord = serde_json::from_str(new).expect("parses");
        assert!(record.registration.requires_approval);
    }
}
