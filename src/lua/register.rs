//! The `registry` table tool files call: `registry.register{...}` (or positional) and
//! `registry.hook(event, fn)`. Each call is validated on the spot (SPEC §1) and recorded
//! in the file's [`LoadingFile`]; nothing reaches the Rust registry until the whole file
//! has run without error.

use super::convert::{self, Mode};
use crate::error::LoadError;
use crate::registry::{HookEvent, ResultLimit, ToolName, check_function_schema, json_type};
use mlua::{Function, Lua, MultiValue, Table, Value as LuaValue};
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
    /// Required environment variables.
    pub requires_env: Vec<String>,
    /// May await async host APIs.
    pub is_async: bool,
    /// Registry metadata; `None` means `schema.description`.
    pub description: Option<String>,
    /// Emoji ("" = unset).
    pub emoji: String,
    /// Result size limit.
    pub max_result_size_chars: Option<ResultLimit>,
    /// Optional schema-override function.
    pub dynamic_schema_overrides: Option<Function>,
    /// `override = true`.
    pub override_existing: bool,
    /// Scope overlay.
    pub scope: Option<String>,
    /// Per-call deadline.
    pub timeout_ms: Option<u64>,
    /// May run beside other calls.
    pub parallel_safe: bool,
    /// Needs approval.
    pub requires_approval: bool,
    /// Line of the call.
    pub line: u32,
}

/// A validated `registry.hook` call.
#[derive(Debug)]
pub(crate) struct PendingHook {
    /// The event.
    pub event: HookEvent,
    /// The hook function.
    pub function: Function,
    /// Line of the call.
    pub line: u32,
}

/// What one file has registered so far while it runs.
#[derive(Debug, Default)]
pub(crate) struct LoadingFile {
    /// Identifies this run of the file: only its own `registry` binding may record into it.
    pub token: u64,
    /// The file as shown in messages (`tools-lua/x.lua`).
    pub display: String,
    /// Validated tool registrations, in call order.
    pub tools: Vec<PendingTool>,
    /// Validated hooks, in call order.
    pub hooks: Vec<PendingHook>,
    /// The first registration error.
    pub error: Option<LoadError>,
}

/// App-data slot holding the file being loaded; `None` outside loading.
#[derive(Debug, Default)]
pub(super) struct LoadSlot(pub Option<LoadingFile>);

const FIELDS: &[&str] = &[
    "name",
    "toolset",
    "schema",
    "handler",
    "check_fn",
    "requires_env",
    "is_async",
    "description",
    "emoji",
    "max_result_size_chars",
    "dynamic_schema_overrides",
    "override",
    "scope",
    "timeout_ms",
    "parallel_safe",
    "requires_approval",
];

/// Who a `registry` table belongs to.
#[derive(Debug, Clone)]
pub(super) enum Binding {
    /// A tool file: its load token (fresh per run of the file) and how it is shown.
    File {
        /// The [`LoadingFile::token`] of the run this table was made for.
        token: u64,
        /// The file as shown in messages.
        display: String,
    },
    /// A required module: it can never register (only tool files' top levels can).
    Module(String),
}

/// Builds the `registry` table of one environment. Its functions register only while the
/// run of the file they were made for is in progress: a saved reference called later
/// (from a handler, a coroutine, another file's load) raises, so nothing can register on
/// another file's behalf.
pub(super) fn binding(lua: &Lua, binding: Binding) -> mlua::Result<Table> {
    let registry = lua.create_table()?;
    let owner = binding.clone();
    registry.set(
        "register",
        lua.create_function(move |lua, args: MultiValue| {
            record(lua, &owner, "register", |lua, line| {
                let spec = spec_table(lua, args)?;
                let tool = parse_tool(lua, &spec, line)?;
                Ok(Recorded::Tool(Box::new(tool)))
            })
        })?,
    )?;
    registry.set(
        "hook",
        lua.create_function(move |lua, (event, function): (LuaValue, LuaValue)| {
            record(lua, &binding, "hook", |_, line| {
                let event = match &event {
                    LuaValue::String(s) => {
                        let name = s.to_string_lossy();
                        HookEvent::parse(&name).ok_or_else(|| {
                            bad(
                                "event",
                                format!(
                                    "'event' must be one of {}, got {name:?}",
                                    HookEvent::NAMES
                                ),
                            )
                        })?
                    }
                    other => return Err(type_error("event", "a string", other)),
                };
                let function = match function {
                    LuaValue::Function(f) => f,
                    other => return Err(type_error("fn", "a function", &other)),
                };
                Ok(Recorded::Hook(PendingHook {
                    event,
                    function,
                    line,
                }))
            })
        })?,
    )?;
    Ok(registry)
}

enum Recorded {
    Tool(Box<PendingTool>),
    Hook(PendingHook),
}

/// Runs `parse` for a registration call and records the outcome in the loading file; an
/// invalid registration raises `file:line: VERB: message` (and is remembered, so the file's
/// error is that message even if the file catches the raise with pcall).
fn record(
    lua: &Lua,
    owner: &Binding,
    verb: &str,
    parse: impl FnOnce(&Lua, u32) -> Result<Recorded, FieldError>,
) -> mlua::Result<()> {
    let line = caller_line(lua);
    let current = lua
        .app_data_ref::<LoadSlot>()
        .and_then(|slot| slot.0.as_ref().map(|file| file.token));
    match owner {
        Binding::File { token, .. } if current == Some(*token) => {}
        Binding::File { display, .. } => {
            return Err(mlua::Error::runtime(format!(
                "registry.{verb} is only available while {display} loads (at its top level)"
            )));
        }
        Binding::Module(name) => {
            return Err(mlua::Error::runtime(format!(
                "registry.{verb} is only available while a tool file loads, not in module \
                 '{name}'; call it from the tool file"
            )));
        }
    }
    let outcome = parse(lua, line);
    let mut slot = lua
        .app_data_mut::<LoadSlot>()
        .ok_or_else(|| mlua::Error::runtime("registry: no loading state"))?;
    let Some(file) = slot.0.as_mut() else {
        return Err(mlua::Error::runtime("registry: no file is loading"));
    };
    match outcome {
        Ok(Recorded::Tool(tool)) => file.tools.push(*tool),
        Ok(Recorded::Hook(hook)) => file.hooks.push(hook),
        Err(FieldError { field, message }) => {
            let error = LoadError::new(&file.display, Some(line), format!("{verb}: {message}"))
                .with_field(field);
            let text = error.to_string();
            file.error.get_or_insert(error);
            return Err(mlua::Error::runtime(text));
        }
    }
    Ok(())
}

/// The line of the Lua code calling the current Rust function.
pub(super) fn caller_line(lua: &Lua) -> u32 {
    lua.inspect_stack(1, |debug| debug.current_line())
        .flatten()
        .map(|line| line as u32)
        .unwrap_or(0)
}

/// Lua-facing type name (integers and floats are both "number").
fn lua_type(value: &LuaValue) -> &'static str {
    match value {
        LuaValue::Integer(_) | LuaValue::Number(_) => "number",
        v if v.is_null() => "json.null",
        v => v.type_name(),
    }
}

/// An invalid registration: the field at fault (when one is) and the message, which
/// names the field in quotes.
pub(crate) struct FieldError {
    field: Option<String>,
    message: String,
}

impl From<String> for FieldError {
    fn from(message: String) -> Self {
        Self {
            field: None,
            message,
        }
    }
}

/// A problem with `field`; `message` names it.
fn bad(field: &str, message: String) -> FieldError {
    FieldError {
        field: Some(field.to_string()),
        message,
    }
}

fn type_error(field: &str, expected: &str, got: &LuaValue) -> FieldError {
    bad(
        field,
        format!("'{field}' must be {expected}, got {}", lua_type(got)),
    )
}

/// Normalises both call forms to one table: `register{...}` or
/// `register(name, toolset, schema, handler, opts)`.
fn spec_table(lua: &Lua, args: MultiValue) -> Result<Table, FieldError> {
    let mut args = args.into_iter();
    let first = args.next().unwrap_or(LuaValue::Nil);
    if let LuaValue::Table(table) = &first
        && args.len() == 0
    {
        return Ok(table.clone());
    }
    let spec = lua.create_table().map_err(|e| e.to_string())?;
    let opts = {
        let positional = [
            ("name", first),
            ("toolset", args.next().unwrap_or(LuaValue::Nil)),
            ("schema", args.next().unwrap_or(LuaValue::Nil)),
            ("handler", args.next().unwrap_or(LuaValue::Nil)),
        ];
        for (field, value) in positional {
            spec.raw_set(field, value).map_err(|e| e.to_string())?;
        }
        args.next().unwrap_or(LuaValue::Nil)
    };
    match opts {
        LuaValue::Nil => {}
        LuaValue::Table(opts) => {
            for pair in opts.pairs::<LuaValue, LuaValue>() {
                let (key, value) = pair.map_err(|e| e.to_string())?;
                if let LuaValue::String(k) = &key
                    && ["name", "toolset", "schema", "handler"].contains(&&*k.to_string_lossy())
                {
                    let field = format!("opts.{}", k.to_string_lossy());
                    let message = format!("'{field}' repeats a positional argument");
                    return Err(bad(&field, message));
                }
                spec.raw_set(key, value).map_err(|e| e.to_string())?;
            }
        }
        other => return Err(type_error("opts", "a table", &other)),
    }
    if args.next().is_some() {
        return Err("takes a table, or (name, toolset, schema, handler, opts)"
            .to_string()
            .into());
    }
    Ok(spec)
}

fn parse_tool(lua: &Lua, spec: &Table, line: u32) -> Result<PendingTool, FieldError> {
    for pair in spec.pairs::<LuaValue, LuaValue>() {
        let (key, _) = pair.map_err(|e| e.to_string())?;
        let known = match &key {
            LuaValue::String(s) => FIELDS.contains(&&*s.to_string_lossy()),
            _ => false,
        };
        if !known {
            let shown = match &key {
                LuaValue::String(s) => s.to_string_lossy(),
                other => format!("[{}]", lua_type(other)),
            };
            return Err(bad(
                &shown,
                format!(
                    "unknown field '{shown}' (known fields: {})",
                    FIELDS.join(", ")
                ),
            ));
        }
    }
    let get = |field: &str| -> Result<LuaValue, FieldError> {
        spec.raw_get(field)
            .map_err(|e| bad(field, format!("'{field}': {e}")))
    };
    let name = name_field("name", get("name")?)?;
    let toolset = name_field("toolset", get("toolset")?)?;
    let schema = schema_field(lua, get("schema")?)?;
    let handler = match get("handler")? {
        LuaValue::Function(f) => f,
        LuaValue::Nil => {
            return Err(bad("handler", "'handler' is required (a function)".into()));
        }
        other => return Err(type_error("handler", "a function", &other)),
    };
    Ok(PendingTool {
        name,
        toolset,
        schema,
        handler,
        check_fn: optional_function("check_fn", get("check_fn")?)?,
        requires_env: string_list("requires_env", get("requires_env")?)?,
        is_async: optional_bool("is_async", get("is_async")?)?.unwrap_or(false),
        description: optional_string("description", get("description")?)?,
        emoji: optional_string("emoji", get("emoji")?)?.unwrap_or_default(),
        max_result_size_chars: result_limit(get("max_result_size_chars")?)?,
        dynamic_schema_overrides: optional_function(
            "dynamic_schema_overrides",
            get("dynamic_schema_overrides")?,
        )?,
        override_existing: optional_bool("override", get("override")?)?.unwrap_or(false),
        scope: match optional_string("scope", get("scope")?)? {
            Some(scope) => Some(
                ToolName::new(&scope)
                    .map_err(|e| bad("scope", format!("'scope' {e}")))?
                    .to_string(),
            ),
            None => None,
        },
        timeout_ms: positive_integer("timeout_ms", get("timeout_ms")?)?,
        parallel_safe: optional_bool("parallel_safe", get("parallel_safe")?)?.unwrap_or(false),
        requires_approval: optional_bool("requires_approval", get("requires_approval")?)?
            .unwrap_or(false),
        line,
    })
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
