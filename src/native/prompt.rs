//! Rust prompts registered by the embedding program (`HostBuilder::native_prompt`).

use super::InvalidNativeTool as Invalid;
use super::completers::Completers;
use crate::registry::{
    CallContext, ContentFn, ContentInfo, HandlerError, NativeHandler, Origin, PromptArgument,
    PromptEntry, ToolName,
};
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;

/// A Rust prompt, served like a `registry.prompt{...}` written in Lua (listed by
/// [`Host::prompts`](crate::Host::prompts), rendered by
/// [`Host::get_prompt`](crate::Host::get_prompt), MCP `prompts/*`, `toolhost prompt`).
///
/// `render` gets the arguments as a JSON object of strings (checked against
/// [`argument`](Self::argument)s first) and answers in the shapes a Lua `render` does:
/// text (one user message) or an array of `{"role": "user"|"assistant", "content": <text or
/// an MCP content block>}`. A [`HandlerError`] is the prompt's `handler_error`.
#[derive(Clone)]
pub struct NativePrompt {
    info: ContentInfo,
    arguments: Vec<PromptArgument>,
    render: NativeHandler,
    complete: Completers,
}

impl NativePrompt {
    /// A prompt called `name` (`^[A-Za-z0-9_-]{1,64}$`) in the toolset `prompts`, answered
    /// by `render(args, ctx)`.
    pub fn new<F, Fut>(name: &str, render: F) -> Self
    where
        F: Fn(Value, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, HandlerError>> + Send + 'static,
    {
        Self {
            info: ContentInfo {
                name: name.to_string(),
                toolset: "prompts".to_string(),
                ..ContentInfo::default()
            },
            arguments: Vec::new(),
            render: Arc::new(move |args, ctx| Box::pin(render(args, ctx))),
            complete: Completers::default(),
        }
    }

    /// Human-readable title.
    pub fn title(mut self, title: &str) -> Self {
        self.info.title = Some(title.to_string());
        self
    }

    /// What it is for.
    pub fn description(mut self, description: &str) -> Self {
        self.info.description = Some(description.to_string());
        self
    }

    /// The toolset it belongs to (default `prompts`).
    pub fn toolset(mut self, toolset: &str) -> Self {
        self.info.toolset = toolset.to_string();
        self
    }

    /// Adds an argument (in order); `prompts/get` without a required one is refused.
    pub fn argument(mut self, name: &str, description: Option<&str>, required: bool) -> Self {
        self.arguments.push(PromptArgument {
            name: name.to_string(),
            description: description.map(str::to_string),
            required,
        });
        self
    }

    /// Completes the argument `argument`: `complete(prefix, ctx)` answers the candidate
    /// values (the first 100 are sent).
    pub fn complete<F, Fut>(mut self, argument: &str, complete: F) -> Self
    where
        F: Fn(String, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, HandlerError>> + Send + 'static,
    {
        self.complete.add(argument, complete);
        self
    }

    /// Validates the fields and builds the registry entry; the message names the prompt
    /// and the field.
    pub(crate) fn into_entry(self) -> Result<PromptEntry, Invalid> {
        let name = self.info.name.clone();
        let invalid = |message: String| Invalid(format!("prompt {name:?}: {message}"));
        ToolName::new(&name).map_err(|e| invalid(format!("'name' {e}")))?;
        ToolName::new(&self.info.toolset).map_err(|e| invalid(format!("'toolset' {e}")))?;
        for (i, argument) in self.arguments.iter().enumerate() {
            if argument.name.is_empty() {
                return Err(invalid(format!("argument {} has an empty name", i + 1)));
            }
            if self.arguments[..i].iter().any(|a| a.name == argument.name) {
                return Err(invalid(format!(
                    "argument {:?} is given twice",
                    argument.name
                )));
            }
        }
        if let Some(extra) = self
            .complete
            .names()
            .find(|n| !self.arguments.iter().any(|a| a.name == *n))
        {
            return Err(invalid(format!(
                "'complete.{extra}' names no argument of the prompt"
            )));
        }
        Ok(PromptEntry {
            info: self.info,
            arguments: self.arguments,
            render: ContentFn::Native(self.render),
            complete: self.complete.into_dispatcher(),
            origin: Origin::native(),
        })
    }
}
