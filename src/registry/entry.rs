//! What the registry stores about a tool and a hook.

use super::context::{NativeHandler, NativeProbe};
use super::name::ToolName;
use super::registration::Registration;
use serde_json::{Map, Value};
use std::fmt;
use std::path::PathBuf;

/// Where a tool came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Source {
    /// A file in a built-in tool directory.
    Builtin,
    /// A file of the shipped tool library embedded in the binary (`[library]`); a tool of
    /// the same name from any other source takes its place.
    Library,
    /// A file in the plugin directory of this id.
    Plugin(String),
    /// A Rust handler registered by the embedding program.
    Native,
    /// A tool of the external MCP server `[mcp_servers.NAME]`.
    Mcp(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Builtin => f.write_str("builtin"),
            Source::Library => f.write_str("library"),
            Source::Plugin(id) => write!(f, "plugin:{id}"),
            Source::Native => f.write_str("native"),
            Source::Mcp(server) => write!(f, "mcp:{server}"),
        }
    }
}

/// A Lua function held by every VM under the same id; the registry only stores the id so
/// that it never depends on a particular Lua state. The id is derived from where the
/// function was registered (file position in the load order, registration position in the
/// file, role), so every VM that loads the same files derives the same ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LuaFnId(pub u64);

/// What a Lua function is for, part of its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FnRole {
    /// A tool handler.
    Handler = 0,
    /// A `check_fn`.
    Check = 1,
    /// A `dynamic_schema_overrides` function.
    Overrides = 2,
    /// A `registry.hook` function.
    Hook = 3,
    /// A task tool's `prepare` function.
    Prepare = 4,
    /// A resource's `read` or a prompt's `render`.
    Read = 5,
    /// A resource's `list`.
    List = 6,
    /// The dispatcher of a resource's or a prompt's `complete` table.
    Complete = 7,
}

/// Where the ordinals of a file's resources and prompts start: their functions share the
/// file's id space with its tools' without colliding (a file holds far fewer tools).
const RESOURCE_ORDINALS: u32 = 1 << 28;
/// Where the ordinals of a file's prompts start (see [`RESOURCE_ORDINALS`]).
const PROMPT_ORDINALS: u32 = 1 << 27;

impl LuaFnId {
    /// The id of the `ordinal`-th registration's `role` function in file `file_index`.
    pub fn new(file_index: u32, ordinal: u32, role: FnRole) -> Self {
        Self(((file_index as u64) << 32) | ((ordinal as u64) << 3) | role as u64)
    }

    /// The id of the `ordinal`-th resource's `role` function in file `file_index`.
    pub(crate) fn resource(file_index: u32, ordinal: u32, role: FnRole) -> Self {
        Self::new(file_index, RESOURCE_ORDINALS | ordinal, role)
    }

    /// The id of the `ordinal`-th prompt's `role` function in file `file_index`.
    pub(crate) fn prompt(file_index: u32, ordinal: u32, role: FnRole) -> Self {
        Self::new(file_index, PROMPT_ORDINALS | ordinal, role)
    }

    /// The file position this id belongs to.
    pub fn file_index(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// The id of the `role` function of the same registration (a handler's `prepare`).
    pub fn sibling(self, role: FnRole) -> Self {
        Self::new(self.file_index(), self.ordinal(), role)
    }

    /// The registration's position in its file.
    pub fn ordinal(self) -> u32 {
        ((self.0 >> 3) & 0x1FFF_FFFF) as u32
    }
}

/// How a tool's handler runs.
#[derive(Clone)]
pub enum Handler {
    /// A Lua function, resolved per VM.
    Lua(LuaFnId),
    /// A Rust async function.
    Native(NativeHandler),
}

impl fmt::Debug for Handler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Handler::Lua(id) => write!(f, "Lua({})", id.0),
            Handler::Native(_) => f.write_str("Native"),
        }
    }
}

/// An optional function the registry calls without arguments (`check_fn`,
/// `dynamic_schema_overrides`).
#[derive(Clone)]
pub enum Probe<T> {
    /// A Lua function, resolved per VM.
    Lua(LuaFnId),
    /// A Rust function.
    Native(NativeProbe<T>),
}

impl<T> fmt::Debug for Probe<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Probe::Lua(id) => write!(f, "Lua({})", id.0),
            Probe::Native(_) => f.write_str("Native"),
        }
    }
}

/// One registered tool: every field of `registry.register{...}` plus where it came from.
/// The plain options of the registration (deadline, approval, annotations, …) are its
/// [`Registration`], read through the entry (`entry.timeout_ms`) as if they were its own.
#[derive(Debug, Clone)]
pub struct ToolEntry {
    /// The validated tool name.
    pub name: ToolName,
    /// The toolset it belongs to.
    pub toolset: ToolName,
    /// The model-facing function schema (`description`, `parameters`, …), a JSON object.
    pub(crate) schema: super::FunctionSchema,
    /// `parameters` compiled once (at registration, or at the first call when the schema
    /// was already known to compile); arguments are validated with it.
    pub(crate) validator: super::ParametersValidator,
    /// The handler.
    pub handler: Handler,
    /// Optional availability probe.
    pub check_fn: Option<Probe<bool>>,
    /// Registry metadata (defaults to `schema.description`).
    pub description: String,
    /// Optional function whose result is shallow-merged over the schema.
    pub dynamic_schema_overrides: Option<Probe<Option<Map<String, Value>>>>,
    /// Table results are checked against it and sent to MCP clients as `structuredContent`.
    pub(crate) output_schema: Option<super::OutputSchema>,
    /// The registration's plain options, as registered (a tool directory's scope applied).
    pub registration: Registration,
    /// Where the tool came from.
    pub source: Source,
    /// The file that registered it (absolute), for Lua tools.
    pub file: Option<PathBuf>,
    /// The line of the `registry.register` call.
    pub line: Option<u32>,
    /// Registered but unavailable for this reason, whatever `check_fn` says (the tool of an
    /// MCP server that is down).
    pub offline: Option<String>,
    /// What its code can do to the world, for Lua tools (docs/effects.md).
    pub effects: Option<std::sync::Arc<super::ToolEffects>>,
}

/// An entry reads its registration's options as its own fields (`tool.timeout_ms`): every
/// stage of a call reads them, and they are the entry's data, only written down once.
impl std::ops::Deref for ToolEntry {
    type Target = Registration;

    fn deref(&self) -> &Registration {
        &self.registration
    }
}

impl ToolEntry {
    /// The annotations it is served with (checked, or filled in from its effects), by
    /// their Lua names (`list --json`).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn annotations_json(&self) -> Value {
        serde_json::to_value(&self.annotations).unwrap_or_else(|_| Value::Object(Map::new()))
    }

    /// Its distinct effects (docs/effects.md); `null` for tools that are not Lua files.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn effects_json(&self) -> Value {
        match &self.effects {
            Some(effects) => Value::from(effects.names()),
            None => Value::Null,
        }
    }

    /// `file:line` of the registration, or the source for native tools.
    pub fn origin(&self) -> String {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => format!("{}:{line}", file.display()),
            (Some(file), None) => file.display().to_string(),
            _ => self.source.to_string(),
        }
    }
}

/// The events a hook can subscribe to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum HookEvent {
    /// Before a call: may modify arguments, block, or ask for approval.
    PreToolCall,
    /// After a call: observes the result.
    PostToolCall,
    /// After a call: may replace the result text.
    TransformToolResult,
}

impl HookEvent {
    /// Every event, for error messages.
    pub(crate) const NAMES: &'static str = "pre_tool_call, post_tool_call, transform_tool_result";

    /// Parses the Lua-facing event name.
    pub(crate) fn parse(name: &str) -> Option<Self> {
        match name {
            "pre_tool_call" => Some(Self::PreToolCall),
            "post_tool_call" => Some(Self::PostToolCall),
            "transform_tool_result" => Some(Self::TransformToolResult),
            _ => None,
        }
    }
}

/// A Lua hook registered with `registry.hook(event, fn)`.
#[derive(Debug, Clone)]
pub(crate) struct HookEntry {
    /// The event.
    pub event: HookEvent,
    /// The function, resolved per VM.
    pub function: LuaFnId,
    /// The file that registered it.
    pub file: PathBuf,
    /// The line of the `registry.hook` call.
    pub line: u32,
    /// Where the file came from.
    pub source: Source,
    /// It sees every call (built-in files, and plugins granted the `hooks` capability);
    /// otherwise only calls of its own plugin's tools.
    pub sees_every_call: bool,
}

impl HookEntry {
    /// Whether this hook runs for a call of a tool from `tool_source`.
    pub(crate) fn applies_to(&self, tool_source: &Source) -> bool {
        self.sees_every_call || self.source == *tool_source
    }
}

/// A minimal Lua tool entry for unit tests.
#[cfg(test)]
pub(crate) fn test_entry(name: &str, toolset: &str) -> ToolEntry {
    ToolEntry {
        name: ToolName::new(name).expect("valid test name"),
        toolset: ToolName::new(toolset).expect("valid test toolset"),
        schema: Map::new().into(),
        validator: Default::default(),
        handler: Handler::Lua(LuaFnId(0)),
        check_fn: None,
        description: String::new(),
        dynamic_schema_overrides: None,
        output_schema: None,
        registration: Registration::default(),
        source: Source::Builtin,
        file: None,
        line: None,
        offline: None,
        effects: None,
    }
}
