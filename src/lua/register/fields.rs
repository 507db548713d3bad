//! The fields of `registry.register{...}` (docs/lua-api.md): one table with each field's name, LuaLS
//! type, documentation and parser. It drives the registration check (unknown fields,
//! required fields, each field's validation), the LuaLS stubs (`toolhost stubs`) and the
//! field table of docs/lua-api.md (a test keeps that in step), so the three cannot drift.

use crate::lua::convert::{self, Mode};
use crate::registry::{
    Annotations, Capability, Invalid, OutputSchema, Registration, ResultLimit, TaskSupport,
    ToolName, check_function_schema, json_type,
};
use mlua::{Function, Lua, Table, Value as LuaValue};
use serde_json::{Map, Value};

/// A validated `registry.register` call, still holding its Lua functions.
#[derive(Debug)]
pub(crate) struct PendingTool {
    /// Tool name.
    pub name: ToolName,
    /// Toolset name.
    pub toolset: ToolName,
    /// The function schema (a JSON object with an object-typed `parameters`).
    pub schema: Map<String, Value>,
    /// The handler.
    pub handler: Function,
    /// Optional availability probe.
    pub check_fn: Option<Function>,
    /// A task tool's `prepare`: runs before the task is created.
    pub prepare: Option<Function>,
    /// Registry metadata; `None` means `schema.description`.
    pub description: Option<String>,
    /// Optional schema-override function.
    pub dynamic_schema_overrides: Option<Function>,
    /// Output schema, compiled.
    pub output_schema: Option<OutputSchema>,
    /// The plain options (`requires_env`, `timeout_ms`, `annotations`, …).
    pub registration: Registration,
    /// Line of the call.
    pub line: u32,
}

/// One registration field.
#[cfg_attr(not(any(test, feature = "cli")), allow(dead_code))]
pub(crate) struct RegisterField {
    /// The field's name in the table.
    pub name: &'static str,
    /// Registration fails without it.
    pub required: bool,
    /// Its LuaLS type (stubs, docs).
    pub lua_type: &'static str,
    /// What it means (stubs, docs).
    pub doc: &'static str,
    /// What a required field must be, for "'F' is required (…)".
    pub expects: &'static str,
    /// Validates a non-nil value into the draft.
    pub parse: fn(&Lua, &'static str, LuaValue, &mut Draft) -> Result<(), FieldError>,
}

/// A registration being read, field by field.
#[derive(Default)]
pub(crate) struct Draft {
    name: Option<ToolName>,
    toolset: Option<ToolName>,
    schema: Option<Map<String, Value>>,
    handler: Option<Function>,
    check_fn: Option<Function>,
    prepare: Option<Function>,
    description: Option<String>,
    dynamic_schema_overrides: Option<Function>,
    output_schema: Option<OutputSchema>,
    registration: Registration,
}

/// Every field, in the order they are checked and documented.
pub(crate) const REGISTER_FIELDS: &[RegisterField] = &[
    RegisterField {
        name: "name",
        required: true,
        lua_type: "string",
        doc: "Tool name, ^[A-Za-z0-9_-]{1,64}$",
        expects: "a string",
        parse: |_, field, value, draft| {
            draft.name = Some(name_field(field, value)?);
            Ok(())
        },
    },
    RegisterField {
        name: "toolset",
        required: true,
        lua_type: "string",
        doc: "Toolset name, same charset",
        expects: "a string",
        parse: |_, field, value, draft| {
            draft.toolset = Some(name_field(field, value)?);
            Ok(())
        },
    },
    RegisterField {
        name: "schema",
        required: true,
        lua_type: "{description?: string, parameters: table}",
        doc: "The model-facing function schema; parameters is a JSON-Schema object",
        expects: "a table",
        parse: |lua, _, value, draft| {
            draft.schema = Some(schema_field(lua, value)?);
            Ok(())
        },
    },
    RegisterField {
        name: "handler",
        required: true,
        lua_type: "fun(args: table, ctx: toolhost.Ctx, prepared: any): string|table",
        doc: "Returns text, a table (sent as JSON) or a multimodal envelope; a task tool's handler also gets what its `prepare` returned",
        expects: "a function",
        parse: |_, field, value, draft| {
            draft.handler = optional_function(field, value)?;
            Ok(())
        },
    },
    RegisterField {
        name: "check_fn",
        required: false,
        lua_type: "fun(): boolean, string?",
        doc: "Availability probe (cached per check_fn and scope); `return false, \"why\"` gives the reason shown",
        expects: "a function",
        parse: |_, field, value, draft| {
            draft.check_fn = optional_function(field, value)?;
            Ok(())
        },
    },
    RegisterField {
        name: "requires_env",
        required: false,
        lua_type: "string[]",
        doc: "Variables that must be set; also what env.get may read",
        expects: "a list of strings",
        parse: |_, field, value, draft| {
            draft.registration.requires_env = string_list(field, value)?;
            Ok(())
        },
    },
    RegisterField {
        name: "is_async",
        required: false,
        lua_type: "boolean",
        doc: "Declares that the handler awaits host APIs (time.sleep, proc.run); shown by list --json",
        expects: "a boolean",
        parse: |_, field, value, draft| {
            draft.registration.is_async = optional_bool(field, value)?.unwrap_or(false);
            Ok(())
        },
    },
    RegisterField {
        name: "description",
        required: false,
        lua_type: "string",
        doc: "Registry metadata (defaults to schema.description)",
        expects: "a string",
        parse: |_, field, value, draft| {
            draft.description = optional_string(field, value)?;
            Ok(())
        },
    },
    RegisterField {
        name: "emoji",
        required: false,
        lua_type: "string",
        doc: "Shown in listings",
        expects: "a string",
        parse: |_, field, value, draft| {
            draft.registration.emoji = optional_string(field, value)?.unwrap_or_default();
            Ok(())
        },
    },
    RegisterField {
        name: "max_result_size_chars",
        required: false,
        lua_type: "number",
        doc: "Longer text results are spilled to a file (math.huge: never)",
        expects: "a number",
        parse: |_, _, value, draft| {
            draft.registration.max_result_size_chars = result_limit(value)?;
            Ok(())
        },
    },
    RegisterField {
        name: "dynamic_schema_overrides",
        required: false,
        lua_type: "fun(): table?",
        doc: "Fields shallow-merged over the schema on each computation",
        expects: "a function",
        parse: |_, field, value, draft| {
            draft.dynamic_schema_overrides = optional_function(field, value)?;
            Ok(())
        },
    },
    RegisterField {
        name: "override",
        required: false,
        lua_type: "boolean",
        doc: "May shadow a tool of another toolset",
        expects: "a boolean",
        parse: |_, field, value, draft| {
            draft.registration.override_existing = optional_bool(field, value)?.unwrap_or(false);
            Ok(())
        },
    },
    RegisterField {
        name: "scope",
        required: false,
        lua_type: "string",
        doc: "Scope overlay the tool lives in",
        expects: "a string",
        parse: |_, field, value, draft| {
            draft.registration.scope = match optional_string(field, value)? {
                Some(scope) => Some(
                    ToolName::new(&scope)
                        .map_err(|e| bad(field, format!("'{field}' {e}")))?
                        .to_string(),
                ),
                None => None,
            };
            Ok(())
        },
    },
    RegisterField {
        name: "timeout_ms",
        required: false,
        lua_type: "integer",
        doc: "Per-call deadline (default [runtime] timeout_ms)",
        expects: "a positive integer",
        parse: |_, field, value, draft| {
            draft.registration.timeout_ms = positive_integer(field, value)?;
            Ok(())
        },
    },
    RegisterField {
        name: "parallel_safe",
        required: false,
        lua_type: "boolean",
        doc: "May run beside other calls of a batch",
        expects: "a boolean",
        parse: |_, field, value, draft| {
            draft.registration.parallel_safe = optional_bool(field, value)?.unwrap_or(false);
            Ok(())
        },
    },
    RegisterField {
        name: "requires_approval",
        required: false,
        lua_type: "boolean",
        doc: "Every call asks the approver first",
        expects: "a boolean",
        parse: |_, field, value, draft| {
            draft.registration.requires_approval = optional_bool(field, value)?.unwrap_or(false);
            Ok(())
        },
    },
    RegisterField {
        name: "output_schema",
        required: false,
        lua_type: "table",
        doc: "JSON Schema (type = \"object\") a table result must match; MCP clients get it as structuredContent",
        expects: "a table",
        parse: |lua, field, value, draft| {
            draft.output_schema = Some(output_schema_field(lua, field, value)?);
            Ok(())
        },
    },
    RegisterField {
        name: "annotations",
        required: false,
        lua_type: "{title?: string, read_only?: boolean, destructive?: boolean, idempotent?: boolean, open_world?: boolean}",
        doc: "MCP hints for clients (readOnlyHint, destructiveHint, idempotentHint, openWorldHint); checked against the tool's effects at load, filled in when left out",
        expects: "a table",
        parse: |_, field, value, draft| {
            draft.registration.annotations = annotations_field(field, value)?;
            Ok(())
        },
    },
    RegisterField {
        name: "needs",
        required: false,
        lua_type: "(\"elicitation\"|\"sampling\"|\"roots\")[]",
        doc: "Client capabilities the handler's input requests need (ctx.ask: elicitation, ctx.sample: sampling, ctx.roots: roots); an MCP client without one gets error -32021 instead of a run",
        expects: "a list of capability names",
        parse: |_, field, value, draft| {
            draft.registration.needs = needs_field(field, value)?;
            Ok(())
        },
    },
    RegisterField {
        name: "task",
        required: false,
        lua_type: "\"optional\"|\"required\"",
        doc: "MCP Tasks extension: \"optional\" gives clients that declare it a task to poll, \"required\" refuses other clients (-32021); default: no task",
        expects: "\"optional\" or \"required\"",
        parse: |_, field, value, draft| {
            draft.registration.task = task_field(field, value)?;
            Ok(())
        },
    },
    RegisterField {
        name: "prepare",
        required: false,
        lua_type: "fun(args: table, ctx: toolhost.Ctx): any",
        doc: "Task tools only: runs before the task is created (it may ask: `ctx.ask` and the others, in the request's rounds); the task then runs `handler(args, ctx, prepared)` with what it returned",
        expects: "a function",
        parse: |_, field, value, draft| {
            draft.prepare = optional_function(field, value)?;
            Ok(())
        },
    },
];

/// The known name closest to `given` when it is a plausible typo of it (small edit
/// distance relative to its length).
pub(crate) fn closest<'a>(given: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|name| (strsim::damerau_levenshtein(given, name), *name))
        .filter(|(distance, name)| *distance <= (name.len() / 3).max(1))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name)
}

/// The field named `name`, if registrations have one.
fn field_named(name: &str) -> Option<&'static RegisterField> {
    REGISTER_FIELDS.iter().find(|field| field.name == name)
}

/// Reads a registration table: unknown fields are refused, required ones demanded, each
/// field checked by its parser, in table order.
pub(crate) fn parse_tool(lua: &Lua, spec: &Table, line: u32) -> Result<PendingTool, FieldError> {
    for pair in spec.pairs::<LuaValue, LuaValue>() {
        let (key, _) = pair.map_err(|e| e.to_string())?;
        let known = match &key {
            LuaValue::String(s) => field_named(&s.to_string_lossy()).is_some(),
            _ => false,
        };
        if !known {
            let shown = match &key {
                LuaValue::String(s) => s.to_string_lossy(),
                other => format!("[{}]", lua_type(other)),
            };
            let names: Vec<&str> = REGISTER_FIELDS.iter().map(|f| f.name).collect();
            let message = match closest(&shown, &names) {
                Some(near) => format!("unknown field '{shown}' — did you mean '{near}'?"),
                None => format!(
                    "unknown field '{shown}' (known fields: {})",
                    names.join(", ")
                ),
            };
            return Err(bad(&shown, message));
        }
    }
    let mut draft = Draft::default();
    for field in REGISTER_FIELDS {
        let value: LuaValue = spec
            .raw_get(field.name)
            .map_err(|e| bad(field.name, format!("'{}': {e}", field.name)))?;
        if value.is_nil() {
            if field.required {
                return Err(bad(
                    field.name,
                    format!("'{}' is required ({})", field.name, field.expects),
                ));
            }
            continue;
        }
        (field.parse)(lua, field.name, value, &mut draft)?;
    }
    let missing = |name: &str| bad(name, format!("'{name}' is required"));
    if draft.prepare.is_some() && draft.registration.task.is_none() {
        // Without a task there is nothing to prepare for: say so rather than run it anyway.
        return Err(bad(
            "prepare",
            "'prepare' is for task tools: set task = \"optional\" or \"required\"".to_string(),
        ));
    }
    Ok(PendingTool {
        name: draft.name.ok_or_else(|| missing("name"))?,
        toolset: draft.toolset.ok_or_else(|| missing("toolset"))?,
        schema: draft.schema.ok_or_else(|| missing("schema"))?,
        handler: draft.handler.ok_or_else(|| missing("handler"))?,
        check_fn: draft.check_fn,
        prepare: draft.prepare,
        description: draft.description,
        dynamic_schema_overrides: draft.dynamic_schema_overrides,
        output_schema: draft.output_schema,
        registration: draft.registration,
        line,
    })
}

/// The table of registration fields in docs/lua-api.md (Markdown), generated from [`REGISTER_FIELDS`].
#[cfg(test)]
pub(crate) fn readme_table() -> String {
    let mut out = String::from("| field | type | meaning |\n|---|---|---|\n");
    for field in REGISTER_FIELDS {
        let required = if field.required { " (required)" } else { "" };
        let lua_type = field.lua_type.replace('|', "\\|");
        out.push_str(&format!(
            "| `{}`{required} | `{lua_type}` | {} |\n",
            field.name, field.doc
        ));
    }
    out
}

/// Lua-facing type name (integers and floats are both "number").
pub(crate) fn lua_type(value: &LuaValue) -> &'static str {
    match value {
        LuaValue::Integer(_) | LuaValue::Number(_) => "number",
        v if v.is_null() => "json.null",
        v => v.type_name(),
    }
}

/// An invalid registration: the field at fault (when one is) and the message, which
/// names the field in quotes.
pub(crate) struct FieldError {
    /// The field at fault, when one is.
    pub field: Option<String>,
    /// What is wrong; it names the field in quotes.
    pub message: String,
}

impl From<String> for FieldError {
    fn from(message: String) -> Self {
        Self {
            field: None,
            message,
        }
    }
}

impl From<Invalid> for FieldError {
    fn from(invalid: Invalid) -> Self {
        invalid.into_message().into()
    }
}

/// A problem with `field`; `message` names it.
pub(crate) fn bad(field: &str, message: String) -> FieldError {
    FieldError {
        field: Some(field.to_string()),
        message,
    }
}

pub(crate) fn type_error(field: &str, expected: &str, got: &LuaValue) -> FieldError {
    bad(
        field,
        format!("'{field}' must be {expected}, got {}", lua_type(got)),
    )
}

fn name_field(field: &str, value: LuaValue) -> Result<ToolName, FieldError> {
    match value {
        LuaValue::String(s) => {
            ToolName::new(&s.to_string_lossy()).map_err(|e| bad(field, format!("'{field}' {e}")))
        }
        LuaValue::Nil => Err(bad(field, format!("'{field}' is required (a string)"))),
        other => Err(type_error(field, "a string", &other)),
    }
}

fn optional_function(field: &str, value: LuaValue) -> Result<Option<Function>, FieldError> {
    match value {
        LuaValue::Nil => Ok(None),
        LuaValue::Function(f) => Ok(Some(f)),
        other => Err(type_error(field, "a function", &other)),
    }
}

fn optional_bool(field: &str, value: LuaValue) -> Result<Option<bool>, FieldError> {
    match value {
        LuaValue::Nil => Ok(None),
        LuaValue::Boolean(b) => Ok(Some(b)),
        other => Err(type_error(field, "a boolean", &other)),
    }
}

fn optional_string(field: &str, value: LuaValue) -> Result<Option<String>, FieldError> {
    match value {
        LuaValue::Nil => Ok(None),
        LuaValue::String(s) => Ok(Some(s.to_string_lossy())),
        other => Err(type_error(field, "a string", &other)),
    }
}

fn string_list(field: &str, value: LuaValue) -> Result<Vec<String>, FieldError> {
    let table = match value {
        LuaValue::Nil => return Ok(Vec::new()),
        LuaValue::Table(t) => t,
        other => return Err(type_error(field, "a list of strings", &other)),
    };
    let mut out = Vec::new();
    for (i, item) in table.sequence_values::<LuaValue>().enumerate() {
        match item.map_err(|e| e.to_string())? {
            LuaValue::String(s) if !s.as_bytes().is_empty() => out.push(s.to_string_lossy()),
            other => {
                return Err(type_error(
                    &format!("{field}[{}]", i + 1),
                    "a non-empty string",
                    &other,
                ));
            }
        }
    }
    if out.len() != table.pairs::<LuaValue, LuaValue>().count() {
        return Err(bad(
            field,
            format!("'{field}' must be a list of strings (a sequence)"),
        ));
    }
    Ok(out)
}

/// `needs`: a list of capability names (`elicitation`, `sampling`, `roots`), sorted and
/// without duplicates.
fn needs_field(field: &str, value: LuaValue) -> Result<Vec<Capability>, FieldError> {
    let names = string_list(field, value)?;
    let mut needs = Vec::with_capacity(names.len());
    for name in names {
        let Some(capability) = Capability::parse(&name) else {
            let known: Vec<&str> = Capability::ALL.iter().map(|c| c.as_str()).collect();
            return Err(bad(
                field,
                format!(
                    "'{field}' names unknown capability '{name}' (known: {})",
                    known.join(", ")
                ),
            ));
        };
        needs.push(capability);
    }
    needs.sort();
    needs.dedup();
    Ok(needs)
}

fn integral(value: &LuaValue) -> Option<i64> {
    match value {
        LuaValue::Integer(i) => Some(*i),
        LuaValue::Number(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => Some(*n as i64),
        _ => None,
    }
}

fn positive_integer(field: &str, value: LuaValue) -> Result<Option<u64>, FieldError> {
    if value.is_nil() {
        return Ok(None);
    }
    match integral(&value) {
        Some(i) if i > 0 => Ok(Some(i as u64)),
        _ => Err(bad(
            field,
            format!(
                "'{field}' must be a positive integer, got {}",
                describe(&value)
            ),
        )),
    }
}

fn result_limit(value: LuaValue) -> Result<Option<ResultLimit>, FieldError> {
    if let LuaValue::Number(n) = value
        && n == f64::INFINITY
    {
        return Ok(Some(ResultLimit::Unlimited));
    }
    Ok(positive_integer("max_result_size_chars", value)?.map(ResultLimit::Chars))
}

fn describe(value: &LuaValue) -> String {
    match value {
        LuaValue::Integer(i) => i.to_string(),
        LuaValue::Number(n) => n.to_string(),
        LuaValue::String(s) => format!("{:?}", s.to_string_lossy()),
        other => lua_type(other).to_string(),
    }
}

fn schema_field(lua: &Lua, value: LuaValue) -> Result<Map<String, Value>, FieldError> {
    let json =
        match &value {
            LuaValue::Table(_) => convert::lua_to_json(lua, &value, Mode::Schema).map_err(|e| {
                match e.path.is_empty() {
                    true => bad("schema", format!("'schema' {}", e.reason)),
                    false => {
                        let field = format!("schema.{}", e.path);
                        let message = format!("'{field}' {}", e.reason);
                        bad(&field, message)
                    }
                }
            })?,
            LuaValue::Nil => return Err(bad("schema", "'schema' is required (a table)".into())),
            other => return Err(type_error("schema", "a table", other)),
        };
    let Value::Object(schema) = json else {
        return Err(bad(
            "schema",
            format!(
                "'schema' must be a table of fields (description, parameters), got {}",
                json_type(&json)
            ),
        ));
    };
    check_function_schema(&schema)?;
    Ok(schema)
}

fn output_schema_field(
    lua: &Lua,
    field: &str,
    value: LuaValue,
) -> Result<OutputSchema, FieldError> {
    if !matches!(value, LuaValue::Table(_)) {
        return Err(type_error(field, "a table", &value));
    }
    let json = convert::lua_to_json(lua, &value, Mode::Schema).map_err(|e| {
        let at = match e.path.is_empty() {
            true => field.to_string(),
            false => format!("{field}.{}", e.path),
        };
        bad(&at, format!("'{at}' {}", e.reason))
    })?;
    let Value::Object(schema) = json else {
        return Err(bad(
            field,
            format!(
                "'{field}' must be a JSON-Schema object, got {}",
                json_type(&json)
            ),
        ));
    };
    OutputSchema::compile(schema).map_err(|invalid| bad(field, invalid.into_message()))
}

/// `task = "optional" | "required"`; anything else names the two values.
fn task_field(field: &str, value: LuaValue) -> Result<Option<TaskSupport>, FieldError> {
    let expected = "\"optional\" or \"required\"";
    match value {
        LuaValue::Nil => Ok(None),
        LuaValue::String(s) => match &*s.to_string_lossy() {
            "optional" => Ok(Some(TaskSupport::Optional)),
            "required" => Ok(Some(TaskSupport::Required)),
            other => Err(bad(
                field,
                format!("'{field}' must be {expected}, got {other:?}"),
            )),
        },
        other => Err(type_error(field, expected, &other)),
    }
}

fn annotations_field(field: &str, value: LuaValue) -> Result<Annotations, FieldError> {
    let table = match value {
        LuaValue::Table(table) => table,
        other => return Err(type_error(field, "a table", &other)),
    };
    let mut annotations = Annotations::default();
    for pair in table.pairs::<LuaValue, LuaValue>() {
        let (key, value) = pair.map_err(|e| e.to_string())?;
        let name = match &key {
            LuaValue::String(s) => s.to_string_lossy(),
            other => format!("[{}]", lua_type(other)),
        };
        let at = format!("{field}.{name}");
        match name.as_str() {
            "title" => annotations.title = optional_string(&at, value)?,
            "read_only" => annotations.read_only = optional_bool(&at, value)?,
            "destructive" => annotations.destructive = optional_bool(&at, value)?,
            "idempotent" => annotations.idempotent = optional_bool(&at, value)?,
            "open_world" => annotations.open_world = optional_bool(&at, value)?,
            _ => {
                let known: Vec<&str> = Annotations::FIELDS.iter().map(|(n, _)| *n).collect();
                return Err(bad(
                    &at,
                    format!("unknown field '{at}' (known: {})", known.join(", ")),
                ));
            }
        }
    }
    Ok(annotations)
}

#[cfg(test)]
mod tests {
    use super::readme_table;

    #[test]
    fn the_docs_list_every_registration_field() {
        let readme =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/lua-api.md"))
                .expect("docs/lua-api.md");
        let table = readme_table();
        assert!(
            readme.contains(&table),
            "docs/lua-api.md's field table is stale; it should read:\n{table}"
        );
    }
}

#[cfg(test)]
mod suggestions {
    use super::{REGISTER_FIELDS, closest};

    #[test]
    fn typos_suggest_the_closest_field() {
        let names: Vec<&str> = REGISTER_FIELDS.iter().map(|f| f.name).collect();
        assert_eq!(closest("hanlder", &names), Some("handler"));
        assert_eq!(closest("toolst", &names), Some("toolset"));
        assert_eq!(closest("emoj", &names), Some("emoji"));
        assert_eq!(closest("completely_else", &names), None);
    }
}
