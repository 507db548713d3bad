//! The public shapes of resources and prompts, and what a Lua function's return value
//! must look like to become one (docs/lua-api.md). Anything else is a `handler_error`
//! naming what was wrong, never a panic.

use crate::lua::Returned;
use crate::registry::{PromptArgument, PromptEntry, ResourceEntry};
use serde::Serialize;
use serde_json::{Map, Value};
use std::path::PathBuf;

/// A registered resource or resource template, as listed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResourceInfo {
    /// The URI, or the template text when [`Self::template`] is true.
    pub uri: String,
    /// It is an RFC 6570 template (`notes://{id}`).
    pub template: bool,
    /// `name`.
    pub name: String,
    /// `title`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `description`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `mime_type`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// `annotations` (`audience`, `priority`, `lastModified`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// The toolset it belongs to.
    pub toolset: String,
    /// The file that registered it (`None` for a resource a template's `list` named, and
    /// for a native resource).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// The line of the call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// A registered prompt, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptInfo {
    /// `name`.
    pub name: String,
    /// `title`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `description`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments.
    pub arguments: Vec<PromptArgument>,
    /// The toolset it belongs to.
    pub toolset: String,
    /// The file that registered it (`None` for a native prompt).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// The line of the call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// One content item of a resource read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// Text.
    Text {
        /// The URI read.
        uri: String,
        /// Its MIME type.
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The text.
        text: String,
    },
    /// Binary data, base64.
    Blob {
        /// The URI read.
        uri: String,
        /// Its MIME type.
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The data, base64-encoded.
        blob: String,
    },
}

/// One message of a rendered prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// An MCP content block (`{type = "text", text = ...}`, `image`, `resource`, …).
    pub content: Value,
}

/// A rendered prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RenderedPrompt {
    /// The prompt's description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its messages.
    pub messages: Vec<PromptMessage>,
}

/// What a completion request completes an argument of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompletionTarget {
    /// A prompt, by name.
    Prompt(String),
    /// A resource template, by its template text.
    Resource(String),
}

/// Why reading a resource, rendering a prompt or completing gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContentError {
    /// No resource serves the URI, or no prompt has the name (`resource_not_found`).
    #[error("not found: {0}")]
    NotFound(String),
    /// The arguments given do not fit the prompt.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The Lua function raised or returned something unusable (`handler_error`); the
    /// message names `file:line` where Lua gave one.
    #[error("handler error: {0}")]
    Handler(String),
    /// The function ran past `[runtime] timeout_ms` and was stopped (`timeout`).
    #[error("timed out after {0} ms")]
    Timeout(u64),
    /// The caller cancelled.
    #[error("cancelled")]
    Cancelled,
}

impl ContentError {
    /// The error type name (`resource_not_found`, `invalid_arguments`, `handler_error`,
    /// `timeout`, `cancelled`).
    pub fn kind(&self) -> &'static str {
        match self {
            ContentError::NotFound(_) => "resource_not_found",
            ContentError::InvalidArguments(_) => "invalid_arguments",
            ContentError::Handler(_) => "handler_error",
            ContentError::Timeout(_) => "timeout",
            ContentError::Cancelled => "cancelled",
        }
    }
}

impl ResourceInfo {
    pub(super) fn of(entry: &ResourceEntry) -> Self {
        Self {
            uri: entry.uri.clone(),
            template: entry.template.is_some(),
            name: entry.info.name.clone(),
            title: entry.info.title.clone(),
            description: entry.info.description.clone(),
            mime_type: entry.mime_type.clone(),
            annotations: entry.annotations.clone(),
            toolset: entry.info.toolset.clone(),
            file: entry.origin.place().map(|(file, _)| file.to_path_buf()),
            line: entry.origin.place().map(|(_, line)| line),
        }
    }
}

impl PromptInfo {
    pub(super) fn of(entry: &PromptEntry) -> Self {
        Self {
            name: entry.info.name.clone(),
            title: entry.info.title.clone(),
            description: entry.info.description.clone(),
            arguments: entry.arguments.clone(),
            toolset: entry.info.toolset.clone(),
            file: entry.origin.place().map(|(file, _)| file.to_path_buf()),
            line: entry.origin.place().map(|(_, line)| line),
        }
    }
}

/// A handler's return value as JSON (a string stays a string).
pub(super) fn returned_json(returned: Returned) -> Value {
    match returned {
        Returned::Text(text) => Value::String(text),
        Returned::Json(value) | Returned::Multimodal(value) => value,
    }
}

fn handler(message: impl Into<String>) -> super::ContentError {
    ContentError::Handler(message.into())
}

/// `read`'s answer: text, `{ text | blob, mime_type? }`, or a list of those.
pub(super) fn contents(
    uri: &str,
    mime_type: Option<&str>,
    value: Value,
) -> Result<Vec<ResourceContents>, ContentError> {
    let items = match value {
        Value::Array(items) => items,
        single => vec![single],
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            one_content(uri, mime_type, item)
                .map_err(|e| handler(format!("read returned item {}: {e}", i + 1)))
        })
        .collect()
}

fn one_content(
    uri: &str,
    default_mime: Option<&str>,
    item: Value,
) -> Result<ResourceContents, String> {
    let mut map = match item {
        Value::String(text) => {
            return Ok(ResourceContents::Text {
                uri: uri.to_string(),
                mime_type: default_mime.map(str::to_string),
                text,
            });
        }
        Value::Object(map) => map,
        other => {
            return Err(format!(
                "expected text or a table with 'text' or 'blob', got {}",
                crate::json_type::json_type(&other)
            ));
        }
    };
    let mime_type = match map.remove("mime_type").or_else(|| map.remove("mimeType")) {
        None => default_mime.map(str::to_string),
        Some(Value::String(m)) => Some(m),
        Some(_) => return Err("'mime_type' must be a string".to_string()),
    };
    let uri = match map.remove("uri") {
        None => uri.to_string(),
        Some(Value::String(u)) => u,
        Some(_) => return Err("'uri' must be a string".to_string()),
    };
    match (map.remove("text"), map.remove("blob")) {
        (Some(Value::String(text)), None) => Ok(ResourceContents::Text {
            uri,
            mime_type,
            text,
        }),
        (None, Some(Value::String(blob))) => {
            if !super::blocks::is_base64(&blob) {
                return Err("'blob' must be base64 text (A-Z a-z 0-9 + / =)".to_string());
            }
            Ok(ResourceContents::Blob {
                uri,
                mime_type,
                blob,
            })
        }
        (Some(_), Some(_)) => Err("give 'text' or 'blob', not both".to_string()),
        (None, None) => Err("a table needs 'text' or 'blob' (a string)".to_string()),
        _ => Err("'text' and 'blob' must be strings".to_string()),
    }
}

/// `list`'s answer: a list of `{ uri, name, title?, description?, mime_type? }`.
pub(super) fn listed(
    entry: &ResourceEntry,
    value: Value,
) -> Result<Vec<ResourceInfo>, ContentError> {
    let items = match value {
        Value::Array(items) => items,
        Value::Object(map) if map.is_empty() => Vec::new(),
        _ => return Err(handler("list must return a list of tables")),
    };
    let text = |map: &Map<String, Value>, key: &str| {
        map.get(key).and_then(Value::as_str).map(str::to_string)
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let Value::Object(map) = item else {
                return Err(handler(format!("list item {} must be a table", i + 1)));
            };
            let uri = text(&map, "uri")
                .ok_or_else(|| handler(format!("list item {} needs 'uri' (a string)", i + 1)))?;
            Ok(ResourceInfo {
                name: text(&map, "name").unwrap_or_else(|| uri.clone()),
                uri,
                template: false,
                title: text(&map, "title"),
                description: text(&map, "description"),
                mime_type: text(&map, "mime_type").or_else(|| entry.mime_type.clone()),
                annotations: entry.annotations.clone(),
                toolset: entry.info.toolset.clone(),
                file: None,
                line: None,
            })
        })
        .collect()
}

/// A prompt's arguments checked against its declaration: an object of strings, every
/// required one present, none unknown.
pub(super) fn prompt_args(entry: &PromptEntry, args: Value) -> Result<Value, ContentError> {
    let map = match args {
        Value::Null => Map::new(),
        Value::Object(map) => map,
        other => {
            return Err(ContentError::InvalidArguments(format!(
                "arguments must be an object, got {}",
                crate::json_type::json_type(&other)
            )));
        }
    };
    for (key, value) in &map {
        if !entry.arguments.iter().any(|a| &a.name == key) {
            let known: Vec<&str> = entry.arguments.iter().map(|a| a.name.as_str()).collect();
            return Err(ContentError::InvalidArguments(format!(
                "unknown argument '{key}' (known: {})",
                known.join(", ")
            )));
        }
        if !value.is_string() {
            return Err(ContentError::InvalidArguments(format!(
                "argument '{key}' must be a string"
            )));
        }
    }
    if let Some(missing) = entry
        .arguments
        .iter()
        .find(|a| a.required && !map.contains_key(&a.name))
    {
        return Err(ContentError::InvalidArguments(format!(
            "missing required argument '{}'",
            missing.name
        )));
    }
    Ok(Value::Object(map))
}

/// `render`'s answer: text (one user message) or a list of `{ role, content }`, where
/// content is text or an MCP content block.
pub(super) fn messages(value: Value) -> Result<Vec<PromptMessage>, ContentError> {
    let items = match value {
        Value::String(text) => {
            return Ok(vec![PromptMessage {
                role: "user".to_string(),
                content: serde_json::json!({ "type": "text", "text": text }),
            }]);
        }
        Value::Array(items) => items,
        _ => return Err(handler("render must return text or a list of messages")),
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let at = i + 1;
            let Value::Object(mut map) = item else {
                return Err(handler(format!("message {at} must be a table")));
            };
            let role = match map.remove("role") {
                None => "user".to_string(),
                Some(Value::String(r)) if r == "user" || r == "assistant" => r,
                Some(_) => {
                    return Err(handler(format!(
                        "message {at}: 'role' must be \"user\" or \"assistant\""
                    )));
                }
            };
            let content = match map.remove("content") {
                Some(Value::String(text)) => serde_json::json!({ "type": "text", "text": text }),
                Some(Value::Object(block)) => super::blocks::content_block(block)
                    .map_err(|e| handler(format!("message {at}: {e}")))?,
                _ => {
                    return Err(handler(format!(
                        "message {at}: 'content' must be text or a content block with a 'type'"
                    )));
                }
            };
            Ok(PromptMessage { role, content })
        })
        .collect()
}

/// A completion function's answer: a list of strings (at most 100 are kept, as MCP allows).
pub(super) fn completions(value: Value) -> Result<Vec<String>, ContentError> {
    let items = match value {
        Value::Array(items) => items,
        Value::Object(map) if map.is_empty() => Vec::new(),
        _ => return Err(handler("complete must return a list of strings")),
    };
    items
        .into_iter()
        .take(100)
        .map(|item| match item {
            Value::String(s) => Ok(s),
            _ => Err(handler("complete must return a list of strings")),
        })
        .collect()
}
