//! Resources and prompts as the registry keeps them (`registry.resource{...}`,
//! `registry.prompt{...}`, docs/lua-api.md): plain data plus the ids of their Lua
//! functions, so the registry stays independent of any Lua state, like tools.

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
    pub read: LuaFnId,
    /// The `list` function (a template's concrete resources).
    pub list: Option<LuaFnId>,
    /// The dispatcher of the `complete` table and the arguments it completes.
    pub complete: Option<(LuaFnId, Vec<String>)>,
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
    pub render: LuaFnId,
    /// The dispatcher of the `complete` table and the arguments it completes.
    pub complete: Option<(LuaFnId, Vec<String>)>,
    /// Where it was registered.
    pub origin: Origin,
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
    /// The file.
    pub file: PathBuf,
    /// The line of the call.
    pub line: u32,
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
