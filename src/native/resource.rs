//! Rust resources registered by the embedding program (`HostBuilder::native_resource`).

use super::InvalidNativeTool as Invalid;
use super::completers::Completers;
use crate::registry::{
    CallContext, ContentFn, ContentInfo, HandlerError, NativeHandler, Origin, ResourceEntry,
    ToolName, check_annotations, check_uri, json_type,
};
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;

/// A Rust resource: a fixed URI or an RFC 6570 level-1 template (`notes://{id}`) with an
/// async `read` function, served like a `registry.resource{...}` written in Lua (listed by
/// [`Host::resources`](crate::Host::resources), read by
/// [`Host::read_resource`](crate::Host::read_resource), MCP `resources/*`, `toolhost read`).
///
/// `read` gets the template's variables as a JSON object (empty for a fixed URI) and
/// answers in the shapes a Lua `read` does: text (a JSON string), `{"text": ...,
/// "mime_type"?: ...}`, `{"blob": <base64>, "mime_type"?: ...}`, or an array of those. A
/// [`HandlerError`] is the read's `handler_error`.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use serde_json::json;
/// let dir = tempfile::tempdir().unwrap();
/// let host = toolhost::Host::builder()
///     .tools_dir(dir.path())
///     .default_config()
///     .native_resource(toolhost::NativeResource::new("env://{name}", "env", |params, _| async move {
///         Ok(json!(format!("{} is set", params["name"].as_str().unwrap_or(""))))
///     }))
///     .build()
///     .unwrap();
/// let read = host.read_resource("env://HOME", &toolhost::CallContext::default()).await.unwrap();
/// assert_eq!(serde_json::to_value(&read).unwrap()[0]["text"], "HOME is set");
/// # });
/// ```
#[derive(Clone)]
pub struct NativeResource {
    uri: String,
    info: ContentInfo,
    mime_type: Option<String>,
    annotations: Option<Value>,
    read: NativeHandler,
    list: Option<NativeHandler>,
    complete: Completers,
}

impl NativeResource {
    /// A resource at `uri` (a fixed URI or a template) called `name`, in the toolset
    /// `resources`, answered by `read(params, ctx)`.
    pub fn new<F, Fut>(uri: &str, name: &str, read: F) -> Self
    where
        F: Fn(Value, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, HandlerError>> + Send + 'static,
    {
        Self {
            uri: uri.to_string(),
            info: ContentInfo {
                name: name.to_string(),
                toolset: "resources".to_string(),
                ..ContentInfo::default()
            },
            mime_type: None,
            annotations: None,
            read: Arc::new(move |params, ctx| Box::pin(read(params, ctx))),
            list: None,
            complete: Completers::default(),
        }
    }

    /// Human-readable title.
    pub fn title(mut self, title: &str) -> Self {
        self.info.title = Some(title.to_string());
        self
    }

    /// What it holds.
    pub fn description(mut self, description: &str) -> Self {
        self.info.description = Some(description.to_string());
        self
    }

    /// The MIME type of its contents (a `read` answer without one gets it).
    pub fn mime_type(mut self, mime_type: &str) -> Self {
        self.mime_type = Some(mime_type.to_string());
        self
    }

    /// Hints for clients: an object with `audience` (`["user", "assistant"]`), `priority`
    /// (0 to 1) and `lastModified` (ISO 8601), each optional.
    pub fn annotations(mut self, annotations: Value) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// The toolset it belongs to (default `resources`).
    pub fn toolset(mut self, toolset: &str) -> Self {
        self.info.toolset = toolset.to_string();
        self
    }

    /// A template's concrete resources: `list(ctx)` answers an array of `{"uri", "name"?,
    /// "title"?, "description"?, "mime_type"?}` objects, as a Lua `list` does.
    pub fn list<F, Fut>(mut self, list: F) -> Self
    where
        F: Fn(CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, HandlerError>> + Send + 'static,
    {
        self.list = Some(Arc::new(move |_, ctx| Box::pin(list(ctx))));
        self
    }

    /// Completes the template variable `variable`: `complete(prefix, ctx)` answers the
    /// candidate values (the first 100 are sent).
    pub fn complete<F, Fut>(mut self, variable: &str, complete: F) -> Self
    where
        F: Fn(String, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, HandlerError>> + Send + 'static,
    {
        self.complete.add(variable, complete);
        self
    }

    /// Validates the fields and builds the registry entry; the message names the resource
    /// and the field.
    pub(crate) fn into_entry(self) -> Result<ResourceEntry, Invalid> {
        let uri = self.uri;
        let invalid = |message: String| Invalid(format!("resource {uri:?}: {message}"));
        let template = check_uri(&uri, "uri").map_err(invalid)?;
        if self.info.name.is_empty() {
            return Err(invalid("'name' must not be empty".to_string()));
        }
        ToolName::new(&self.info.toolset).map_err(|e| invalid(format!("'toolset' {e}")))?;
        if self.list.is_some() && template.is_none() {
            return Err(invalid(
                "'list' is for templates; a fixed URI lists itself".to_string(),
            ));
        }
        let variables: Vec<&str> = template.iter().flat_map(|t| t.variables()).collect();
        if let Some(extra) = self.complete.names().find(|n| !variables.contains(n)) {
            return Err(invalid(format!(
                "'complete.{extra}' names no variable of the template"
            )));
        }
        match &self.annotations {
            None => {}
            Some(Value::Object(map)) => {
                check_annotations(map).map_err(|(_, message)| invalid(message))?
            }
            Some(other) => {
                return Err(invalid(format!(
                    "'annotations' must be an object, got {}",
                    json_type(other)
                )));
            }
        }
        Ok(ResourceEntry {
            uri,
            template,
            info: self.info,
            mime_type: self.mime_type,
            annotations: self.annotations,
            read: ContentFn::Native(self.read),
            list: self.list.map(ContentFn::Native),
            complete: self.complete.into_dispatcher(),
            origin: Origin::native(),
        })
    }
}
