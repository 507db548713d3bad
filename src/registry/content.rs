//! Resources and prompts as the registry keeps them (`registry.resource{...}`,
//! `registry.prompt{...}`, docs/lua-api.md): plain data plus the ids of their Lua
//! functions, so the registry stays independent of any Lua state, like tools.

use super::context::NativeHandler;
use super::entry::{LuaFnId, Source};
use super::uri_template::UriTemplate;
use serde::Serialize;
use serde_json::Value;
use std::path::PathBuf;

/// A registered resource: a fixed URI or a level-1 URI template.
#[derive(Debug, Clone)]
pub(crate) struct ResourceEntry {
    /// The URI or the template text as registered (the registry key).
    pub uri: String,
    /// The parsed template; `None` for a fixed URI.
    pub template: Option<UriTemplate>,
    /// What a client sees besides the URI.
    pub info: ContentInfo,
    /// `mime_type`.
    pub mime_type: Option<String>,
    /// `annotations` (`audience`, `priority`, `lastModified`), as JSON.
    pub annotations: Option<Value>,
    /// The `read` function.
    pub read: ContentFn,
    /// The `list` function (a template's concrete resources).
    pub list: Option<ContentFn>,
    /// The dispatcher of the `complete` table and the arguments it completes.
    pub complete: Option<(ContentFn, Vec<String>)>,
    /// Where it was registered.
    pub origin: Origin,
}

/// A registered prompt.
#[derive(Debug, Clone)]
pub(crate) struct PromptEntry {
    /// What a client sees (its `name` is the registry key).
    pub info: ContentInfo,
    /// Its arguments, in order.
    pub arguments: Vec<PromptArgument>,
    /// The `render` function.
    pub render: ContentFn,
    /// The dispatcher of the `complete` table and the arguments it completes.
    pub complete: Option<(ContentFn, Vec<String>)>,
    /// Where it was registered.
    pub origin: Origin,
}

/// A resource's or prompt's function: a Lua function held by every VM, or a Rust one
/// (native resources and prompts). Both take one JSON value (the template's variables, the
/// prompt's arguments, `null` for `list`, `{argument, value}` for `complete`) and answer
/// in the same shapes, which the host checks the same way.
#[derive(Clone)]
pub(crate) enum ContentFn {
    /// A Lua function, resolved per VM.
    Lua(LuaFnId),
    /// A Rust async function.
    Native(NativeHandler),
}

impl std::fmt::Debug for ContentFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ContentFn::Lua(id) => write!(f, "Lua({})", id.0),
            ContentFn::Native(_) => f.write_str("Native"),
        }
    }
}

/// The descriptive fields resources and prompts share.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct ContentInfo {
    /// `name`.
    pub name: String,
    /// `title`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `description`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The toolset it belongs to.
    pub toolset: String,
}

/// One argument of a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// What it is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `prompts/get` without it is refused.
    pub required: bool,
}

/// Where a resource or prompt was registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Origin {
    /// The directory's source (a plugin's resources run with the plugin's grants).
    pub source: Source,
    /// The file (empty for a native registration).
    pub file: PathBuf,
    /// The line of the call (0 for a native registration).
    pub line: u32,
}

impl Origin {
    /// A registration by the embedding program (no file).
    pub(crate) fn native() -> Self {
        Self {
            source: Source::Native,
            file: PathBuf::new(),
            line: 0,
        }
    }

    /// The file and line, when a file registered it.
    pub(crate) fn place(&self) -> Option<(&std::path::Path, u32)> {
        (self.source != Source::Native).then_some((self.file.as_path(), self.line))
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.place() {
            Some((file, line)) => write!(f, "{}:{line}", file.display()),
            None => f.write_str("a native registration"),
        }
    }
}

impl ResourceEntry {
    /// The template's variables matched in `uri`, when this resource serves it: a fixed
    /// URI serves itself only (no parameters).
    pub(crate) fn serves(&self, uri: &str) -> Option<Vec<(String, String)>> {
        match &self.template {
            None => (self.uri == uri).then(Vec::new),
            Some(template) => template.matches(uri),
        }
    }
}

/// Checks a resource's `annotations` (`audience`, `priority`, `lastModified`): on a bad
/// one, the field (`annotations.KEY`) and the message.
pub(crate) fn check_annotations(
    map: &serde_json::Map<String, Value>,
) -> Result<(), (String, String)> {
    for (key, value) in map {
        let field = format!("annotations.{key}");
        let ok = match key.as_str() {
            "audience" => value.as_array().is_some_and(|roles| {
                roles
                    .iter()
                    .all(|r| matches!(r.as_str(), Some("user" | "assistant")))
            }),
            "priority" => value.as_f64().is_some_and(|p| (0.0..=1.0).contains(&p)),
            "lastModified" => value.is_string(),
            _ => {
                let message =
                    format!("unknown field '{field}' (known: audience, priority, lastModified)");
                return Err((field, message));
            }
        };
        if !ok {
            let expected = match key.as_str() {
                "audience" => "a list of \"user\" / \"assistant\"",
                "priority" => "a number from 0 to 1",
                _ => "an ISO 8601 string",
            };
            let message = format!("'{field}' must be {expected}");
            return Err((field, message));
        }
    }
    Ok(())
}
