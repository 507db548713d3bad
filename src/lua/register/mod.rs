//! The `registry` table tool files call: `registry.register{...}` (or positional) and
//! `registry.hook(event, fn)`. Each call is validated on the spot (docs/lua-api.md) and recorded
//! in the file's [`LoadingFile`]; nothing reaches the Rust registry until the whole file
//! has run without error.
//!
//! This room holds a registration's life in the runtime: the binding (here), the fields'
//! table and checks ([`fields`]), and the registration as plain, cacheable data
//! ([`record`]).

pub(crate) mod content;
pub(crate) mod fields;
pub(crate) mod record;

use crate::error::LoadError;
use crate::registry::HookEvent;
use content::{PendingPrompt, PendingResource, parse_prompt, parse_resource};
use fields::{FieldError, PendingTool, bad, parse_tool, type_error};
use mlua::{Function, Lua, MultiValue, Table, Value as LuaValue};

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
    /// Validated `registry.resource` calls, in call order.
    pub resources: Vec<PendingResource>,
    /// Validated `registry.prompt` calls, in call order.
    pub prompts: Vec<PendingPrompt>,
    /// The first registration error.
    pub error: Option<LoadError>,
    /// Its top-level code read something outside its source (a clock, the environment,
    /// files, the store, random numbers): running it again may register something else.
    pub impure: bool,
    /// Its top-level code required a module (its registrations may depend on `lib/`).
    pub required: bool,
}

/// Records, for the file being loaded (if any), that its top-level code read something
/// outside its source.
pub(super) fn note_impure(lua: &Lua) {
    if let Some(mut slot) = lua.app_data_mut::<LoadSlot>()
        && let Some(file) = slot.0.as_mut()
    {
        file.impure = true;
    }
}

/// Records, for the file being loaded (if any), that it required a module.
pub(super) fn note_required(lua: &Lua) {
    if let Some(mut slot) = lua.app_data_mut::<LoadSlot>()
        && let Some(file) = slot.0.as_mut()
    {
        file.required = true;
    }
}

/// App-data slot holding the file being loaded; `None` outside loading.
#[derive(Debug, Default)]
pub(super) struct LoadSlot(pub Option<LoadingFile>);

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
    let owner = binding.clone();
    registry.set(
        "resource",
        lua.create_function(move |lua, spec: LuaValue| {
            record(lua, &owner, "resource", |lua, line| {
                let spec = one_table(spec)?;
                Ok(Recorded::Resource(Box::new(parse_resource(
                    lua, &spec, line,
                )?)))
            })
        })?,
    )?;
    let owner = binding.clone();
    registry.set(
        "prompt",
        lua.create_function(move |lua, spec: LuaValue| {
            record(lua, &owner, "prompt", |lua, line| {
                let spec = one_table(spec)?;
                Ok(Recorded::Prompt(Box::new(parse_prompt(lua, &spec, line)?)))
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
    Resource(Box<PendingResource>),
    Prompt(Box<PendingPrompt>),
}

/// `registry.resource` and `registry.prompt` take one table.
fn one_table(spec: LuaValue) -> Result<Table, FieldError> {
    match spec {
        LuaValue::Table(table) => Ok(table),
        other => Err(type_error("spec", "a table", &other)),
    }
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
        Ok(Recorded::Resource(resource)) => file.resources.push(*resource),
        Ok(Recorded::Prompt(prompt)) => file.prompts.push(*prompt),
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
