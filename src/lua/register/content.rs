//! `registry.resource{...}` and `registry.prompt{...}` (docs/lua-api.md): their fields,
//! checked on the spot like a tool's, into pending registrations that still hold their Lua
//! functions. The `complete` table becomes one dispatcher function, so a registration
//! adopts a fixed number of functions into the VM whatever its arguments.

use super::fields::{FieldError, bad, closest, lua_type, type_error};
use crate::lua::convert::{self, Mode};
use crate::registry::{
    ContentInfo, PromptArgument, ToolName, UriTemplate, check_annotations, check_uri,
};
use mlua::{Function, Lua, Table, Value as LuaValue};
use serde_json::Value;

/// A validated `registry.resource` call.
#[derive(Debug)]
pub(crate) struct PendingResource {
    /// The URI or template text.
    pub uri: String,
    /// The parsed template (`None`: a fixed URI).
    pub template: Option<UriTemplate>,
    /// Name, title, description, toolset.
    pub info: ContentInfo,
    /// `mime_type`.
    pub mime_type: Option<String>,
    /// `annotations` as JSON.
    pub annotations: Option<Value>,
    /// `read(params, ctx)`.
    pub read: Function,
    /// `list(ctx)`, called as `(nil, ctx)` through a wrapper.
    pub list: Option<Function>,
    /// The `complete` dispatcher and its argument names.
    pub complete: Option<(Function, Vec<String>)>,
    /// Line of the call.
    pub line: u32,
}

/// A validated `registry.prompt` call.
#[derive(Debug)]
pub(crate) struct PendingPrompt {
    /// Name, title, description, toolset.
    pub info: ContentInfo,
    /// The arguments.
    pub arguments: Vec<PromptArgument>,
    /// `render(args, ctx)`.
    pub render: Function,
    /// The `complete` dispatcher and its argument names.
    pub complete: Option<(Function, Vec<String>)>,
    /// Line of the call.
    pub line: u32,
}

/// The fields of `registry.resource{...}`: name, LuaLS type, documentation.
pub(crate) const RESOURCE_FIELDS: &[(&str, &str, &str)] = &[
    (
        "uri",
        "string?",
        "A fixed URI, or an RFC 6570 template: `notes://{id}`, or `{+path}` for a value holding `/`",
    ),
    (
        "uri_template",
        "string?",
        "A template, said explicitly (give `uri` or `uri_template`)",
    ),
    ("name", "string", "Name shown to clients"),
    ("title", "string?", "Human-readable title"),
    ("description", "string?", "What it holds"),
    ("mime_type", "string?", "MIME type of its contents"),
    (
        "annotations",
        "{audience?: string[], priority?: number, lastModified?: string}?",
        "Hints for clients",
    ),
    (
        "toolset",
        "string?",
        "Toolset it belongs to (default `resources`)",
    ),
    (
        "read",
        "fun(params: table, ctx: toolhost.Ctx): string|table",
        "Returns text, `{ blob = <base64>, mime_type = ... }`, `{ text = ..., mime_type = ... }` or a list of those; `params` holds the template's variables",
    ),
    (
        "list",
        "(fun(ctx: toolhost.Ctx): table[])?",
        "A template's concrete resources: a list of `{ uri, name, title?, description?, mime_type? }`",
    ),
    (
        "complete",
        "table<string, fun(prefix: string, ctx: toolhost.Ctx): string[]>?",
        "Completions per template variable",
    ),
];

/// The fields of `registry.prompt{...}`: name, LuaLS type, documentation.
pub(crate) const PROMPT_FIELDS: &[(&str, &str, &str)] = &[
    ("name", "string", "Prompt name, ^[A-Za-z0-9_-]{1,64}$"),
    ("title", "string?", "Human-readable title"),
    ("description", "string?", "What it is for"),
    (
        "toolset",
        "string?",
        "Toolset it belongs to (default `prompts`)",
    ),
    (
        "arguments",
        "{name: string, description?: string, required?: boolean}[]?",
        "Its arguments",
    ),
    (
        "render",
        "fun(args: table, ctx: toolhost.Ctx): string|table",
        "Returns text (one user message) or a list of `{ role = \"user\"|\"assistant\", content = <text or content block> }`",
    ),
    (
        "complete",
        "table<string, fun(prefix: string, ctx: toolhost.Ctx): string[]>?",
        "Completions per argument",
    ),
];

/// Reads a `registry.resource{...}` table.
pub(crate) fn parse_resource(
    lua: &Lua,
    spec: &Table,
    line: u32,
) -> Result<PendingResource, FieldError> {
    unknown_fields(spec, RESOURCE_FIELDS)?;
    let uri = string(spec, "uri")?;
    let explicit = string(spec, "uri_template")?;
    let (field, uri) = match (uri, explicit) {
        (Some(_), Some(_)) => {
            return Err(bad(
                "uri_template",
                "give 'uri' or 'uri_template', not both".to_string(),
            ));
        }
        (Some(uri), None) => ("uri", uri),
        (None, Some(template)) => ("uri_template", template),
        (None, None) => {
            return Err(bad(
                "uri",
                "'uri' (or 'uri_template') is required (a string)".to_string(),
            ));
        }
    };
    let template = check_uri(&uri, field).map_err(|e| bad(field, e))?;
    if field == "uri_template" && template.is_none() {
        return Err(bad(
            field,
            format!("'uri_template' {uri:?} has no {{variable}}; use 'uri' for a fixed URI"),
        ));
    }
    let complete = complete_field(lua, spec)?;
    if let Some((_, names)) = &complete {
        let vars: Vec<&str> = template.iter().flat_map(|t| t.variables()).collect();
        if let Some(extra) = names.iter().find(|n| !vars.contains(&n.as_str())) {
            return Err(bad(
                "complete",
                format!("'complete.{extra}' names no variable of {uri:?}"),
            ));
        }
    }
    let list = function(spec, "list", false)?;
    if list.is_some() && template.is_none() {
        return Err(bad(
            "list",
            "'list' is for templates; a fixed URI lists itself".to_string(),
        ));
    }
    let list = match list {
        // `list(ctx)` is called like every handler, `(args, ctx)`: drop the args.
        Some(list) => Some(
            lua.load("local f = ... return function(_, ctx) return f(ctx) end")
                .set_name("=registry.resource")
                .call::<Function>(list)
                .map_err(|e| e.to_string())?,
        ),
        None => None,
    };
    Ok(PendingResource {
        uri,
        template,
        info: info(spec, "resources")?,
        mime_type: string(spec, "mime_type")?,
        annotations: annotations(lua, spec)?,
        read: function(spec, "read", true)?.ok_or_else(|| bad("read", String::new()))?,
        list,
        complete,
        line,
    })
}

/// Reads a `registry.prompt{...}` table.
pub(crate) fn parse_prompt(
    lua: &Lua,
    spec: &Table,
    line: u32,
) -> Result<PendingPrompt, FieldError> {
    unknown_fields(spec, PROMPT_FIELDS)?;
    let info = info(spec, "prompts")?;
    ToolName::new(&info.name).map_err(|e| bad("name", format!("'name' {e}")))?;
    let arguments = arguments(spec)?;
    let complete = complete_field(lua, spec)?;
    if let Some((_, names)) = &complete
        && let Some(extra) = names
            .iter()
            .find(|n| !arguments.iter().any(|a| &a.name == *n))
    {
        return Err(bad(
            "complete",
            format!("'complete.{extra}' names no argument of the prompt"),
        ));
    }
    Ok(PendingPrompt {
        info,
        arguments,
        render: function(spec, "render", true)?.ok_or_else(|| bad("render", String::new()))?,
        complete,
        line,
    })
}

fn unknown_fields(spec: &Table, known: &[(&str, &str, &str)]) -> Result<(), FieldError> {
    let names: Vec<&str> = known.iter().map(|(name, _, _)| *name).collect();
    for pair in spec.pairs::<LuaValue, LuaValue>() {
        let (key, _) = pair.map_err(|e| e.to_string())?;
        let shown = match &key {
            LuaValue::String(s) => s.to_string_lossy(),
            other => format!("[{}]", lua_type(other)),
        };
        if names.contains(&shown.as_str()) {
            continue;
        }
        let message = match closest(&shown, &names) {
            Some(near) => format!("unknown field '{shown}' — did you mean '{near}'?"),
            None => format!(
                "unknown field '{shown}' (known fields: {})",
                names.join(", ")
            ),
        };
        return Err(bad(&shown, message));
    }
    Ok(())
}

fn info(spec: &Table, default_toolset: &str) -> Result<ContentInfo, FieldError> {
    let name = string(spec, "name")?
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            bad(
                "name",
                "'name' is required (a non-empty string)".to_string(),
            )
        })?;
    let toolset = match string(spec, "toolset")? {
        Some(toolset) => ToolName::new(&toolset)
            .map_err(|e| bad("toolset", format!("'toolset' {e}")))?
            .to_string(),
        None => default_toolset.to_string(),
    };
    Ok(ContentInfo {
        name,
        title: string(spec, "title")?,
        description: string(spec, "description")?,
        toolset,
    })
}

fn string(spec: &Table, field: &str) -> Result<Option<String>, FieldError> {
    match spec.raw_get::<LuaValue>(field).map_err(|e| e.to_string())? {
        LuaValue::Nil => Ok(None),
        LuaValue::String(s) => Ok(Some(s.to_string_lossy())),
        other => Err(type_error(field, "a string", &other)),
    }
}

fn function(spec: &Table, field: &str, required: bool) -> Result<Option<Function>, FieldError> {
    match spec.raw_get::<LuaValue>(field).map_err(|e| e.to_string())? {
        LuaValue::Nil if required => Err(bad(field, format!("'{field}' is required (a function)"))),
        LuaValue::Nil => Ok(None),
        LuaValue::Function(f) => Ok(Some(f)),
        other => Err(type_error(field, "a function", &other)),
    }
}

fn annotations(lua: &Lua, spec: &Table) -> Result<Option<Value>, FieldError> {
    let value: LuaValue = spec.raw_get("annotations").map_err(|e| e.to_string())?;
    if value.is_nil() {
        return Ok(None);
    }
    if !value.is_table() {
        return Err(type_error("annotations", "a table", &value));
    }
    let json = convert::lua_to_json(lua, &value, Mode::Data)
        .map_err(|e| bad("annotations", format!("'annotations': {e}")))?;
    let Value::Object(map) = &json else {
        return Err(bad(
            "annotations",
            "'annotations' must be a table with keys".to_string(),
        ));
    };
    check_annotations(map).map_err(|(field, message)| bad(&field, message))?;
    Ok(Some(json))
}

fn arguments(spec: &Table) -> Result<Vec<PromptArgument>, FieldError> {
    let table = match spec
        .raw_get::<LuaValue>("arguments")
        .map_err(|e| e.to_string())?
    {
        LuaValue::Nil => return Ok(Vec::new()),
        LuaValue::Table(t) => t,
        other => return Err(type_error("arguments", "a list of tables", &other)),
    };
    let mut out: Vec<PromptArgument> = Vec::new();
    for (i, item) in table.sequence_values::<LuaValue>().enumerate() {
        let at = format!("arguments[{}]", i + 1);
        let item = match item.map_err(|e| e.to_string())? {
            LuaValue::Table(t) => t,
            other => return Err(type_error(&at, "a table", &other)),
        };
        for pair in item.pairs::<LuaValue, LuaValue>() {
            let (key, _) = pair.map_err(|e| e.to_string())?;
            let known = matches!(&key, LuaValue::String(s)
                if matches!(&*s.to_string_lossy(), "name" | "description" | "required"));
            if !known {
                let shown = match &key {
                    LuaValue::String(s) => s.to_string_lossy(),
                    other => format!("[{}]", lua_type(other)),
                };
                let field = format!("{at}.{shown}");
                return Err(bad(
                    &field,
                    format!("unknown field '{field}' (known: name, description, required)"),
                ));
            }
        }
        let name = string(&item, "name")
            .map_err(|e| prefixed(&at, e))?
            .filter(|n| !n.is_empty())
            .ok_or_else(|| {
                let field = format!("{at}.name");
                bad(
                    &field,
                    format!("'{field}' is required (a non-empty string)"),
                )
            })?;
        if out.iter().any(|a| a.name == name) {
            let field = format!("{at}.name");
            return Err(bad(&field, format!("'{field}' {name:?} is given twice")));
        }
        let required = match item
            .raw_get::<LuaValue>("required")
            .map_err(|e| e.to_string())?
        {
            LuaValue::Nil => false,
            LuaValue::Boolean(b) => b,
            other => return Err(type_error(&format!("{at}.required"), "a boolean", &other)),
        };
        out.push(PromptArgument {
            name,
            description: string(&item, "description").map_err(|e| prefixed(&at, e))?,
            required,
        });
    }
    Ok(out)
}

fn prefixed(at: &str, error: FieldError) -> FieldError {
    match error.field {
        Some(field) => {
            let full = format!("{at}.{field}");
            let message = error
                .message
                .replace(&format!("'{field}'"), &format!("'{full}'"));
            bad(&full, message)
        }
        None => error,
    }
}

/// The `complete` table as one function `(request, ctx)` where `request` is
/// `{ argument = NAME, value = PREFIX }`, and the names it completes.
fn complete_field(lua: &Lua, spec: &Table) -> Result<Option<(Function, Vec<String>)>, FieldError> {
    let table = match spec
        .raw_get::<LuaValue>("complete")
        .map_err(|e| e.to_string())?
    {
        LuaValue::Nil => return Ok(None),
        LuaValue::Table(t) => t,
        other => return Err(type_error("complete", "a table of functions", &other)),
    };
    let copy = lua.create_table().map_err(|e| e.to_string())?;
    let mut names = Vec::new();
    for pair in table.pairs::<LuaValue, LuaValue>() {
        let (key, value) = pair.map_err(|e| e.to_string())?;
        let LuaValue::String(key) = key else {
            return Err(bad(
                "complete",
                "'complete' keys must be argument names".to_string(),
            ));
        };
        let name = key.to_string_lossy();
        let field = format!("complete.{name}");
        if !value.is_function() {
            return Err(type_error(&field, "a function", &value));
        }
        copy.raw_set(name.as_str(), value)
            .map_err(|e| e.to_string())?;
        names.push(name);
    }
    names.sort();
    // A copy: the file cannot change which function answers after registering.
    let dispatcher = lua
        .load(
            "local fns = ... return function(req, ctx) \
               local f = fns[req.argument] \
               if f == nil then return {} end \
               return f(req.value, ctx) end",
        )
        .set_name("=registry.complete")
        .call::<Function>(copy)
        .map_err(|e| e.to_string())?;
    Ok(Some((dispatcher, names)))
}
