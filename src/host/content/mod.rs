//! Resources and prompts written in Lua (docs/lua-api.md): listing them, reading a
//! resource, rendering a prompt and completing an argument. Each Lua function runs like a
//! tool handler: on a VM that holds it, under the `[runtime] timeout_ms` deadline, stopped
//! when the caller's token is cancelled, with its file's sandbox and grants.

mod blocks;
mod selected;
mod shape;
mod versions;

pub use shape::{
    CompletionTarget, ContentError, PromptInfo, PromptMessage, RenderedPrompt, ResourceContents,
    ResourceInfo,
};

use super::{Host, World};
use crate::lua::HandlerFailure;
use crate::registry::{
    CallContext, CallerDomain, ContentFn, LuaFnId, NativeHandler, Origin, ResourceEntry, Source,
};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;

impl Host {
    /// Every registered resource and resource template, fixed URIs and templates by URI.
    pub fn resources(&self) -> Vec<ResourceInfo> {
        let (_, state) = self.current();
        state.resources().map(|r| ResourceInfo::of(r)).collect()
    }

    /// Every registered prompt, by name.
    pub fn prompts(&self) -> Vec<PromptInfo> {
        let (_, state) = self.current();
        state.prompts().map(|p| PromptInfo::of(p)).collect()
    }

    /// The concrete resources a template's `list` function names (the template has one).
    pub async fn list_template(
        &self,
        template: &str,
        ctx: &CallContext,
    ) -> Result<Vec<ResourceInfo>, ContentError> {
        let (world, state) = self.current();
        let entry = state
            .resources()
            .find(|r| r.uri == template && self.content_selected(&r.info.toolset, ctx))
            .cloned()
            .ok_or_else(|| ContentError::NotFound(template.to_string()))?;
        let Some(list) = entry.list.clone() else {
            return Ok(Vec::new());
        };
        let value = self
            .run(
                &world,
                &list,
                &entry.info.name,
                &entry.origin,
                Value::Null,
                ctx,
            )
            .await?;
        shape::listed(&entry, value)
    }

    /// Reads `uri`: a fixed resource's `read`, or the first template that matches it with
    /// the template's variables as `params`.
    pub async fn read_resource(
        &self,
        uri: &str,
        ctx: &CallContext,
    ) -> Result<Vec<ResourceContents>, ContentError> {
        let (world, state) = self.current();
        let (entry, params) = state
            .resource_for(uri)
            .map(|(entry, params)| (entry.clone(), params))
            // Outside the caller's selection: as if it did not exist.
            .filter(|(entry, _)| self.content_selected(&entry.info.toolset, ctx))
            .ok_or_else(|| ContentError::NotFound(uri.to_string()))?;
        let params: Map<String, Value> = params
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        let value = self
            .run(
                &world,
                &entry.read,
                &entry.info.name,
                &entry.origin,
                Value::Object(params),
                ctx,
            )
            .await?;
        // `nil` from `read`: nothing at this URI (a template matches more than exists).
        if value.is_null() {
            return Err(ContentError::NotFound(uri.to_string()));
        }
        shape::contents(uri, entry.mime_type.as_deref(), value)
    }

    /// Renders the prompt `name` with `args` (a JSON object of strings); a missing required
    /// argument or an unknown one is refused before its `render` runs.
    pub async fn get_prompt(
        &self,
        name: &str,
        args: Value,
        ctx: &CallContext,
    ) -> Result<RenderedPrompt, ContentError> {
        let (world, state) = self.current();
        let entry = state
            .prompt(name)
            .filter(|p| self.content_selected(&p.info.toolset, ctx))
            .cloned()
            .ok_or_else(|| ContentError::NotFound(name.to_string()))?;
        let args = shape::prompt_args(&entry, args)?;
        let value = self
            .run(&world, &entry.render, name, &entry.origin, args, ctx)
            .await?;
        Ok(RenderedPrompt {
            description: entry.info.description.clone(),
            messages: shape::messages(value)?,
        })
    }

    /// Completions for `argument` of a prompt or a resource template, given what the user
    /// typed so far (`value`); empty when it has no `complete` function for the argument.
    pub async fn complete(
        &self,
        target: &CompletionTarget,
        argument: &str,
        value: &str,
        ctx: &CallContext,
    ) -> Result<Vec<String>, ContentError> {
        let (world, state) = self.current();
        let (complete, name, origin) = match target {
            CompletionTarget::Prompt(name) => {
                let entry = state
                    .prompt(name)
                    .filter(|p| self.content_selected(&p.info.toolset, ctx))
                    .ok_or_else(|| ContentError::NotFound(name.clone()))?;
                (
                    entry.complete.clone(),
                    entry.info.name.clone(),
                    entry.origin.clone(),
                )
            }
            CompletionTarget::Resource(uri) => {
                let entry: &Arc<ResourceEntry> = state
                    .resources()
                    .find(|r| &r.uri == uri && self.content_selected(&r.info.toolset, ctx))
                    .ok_or_else(|| ContentError::NotFound(uri.clone()))?;
                (
                    entry.complete.clone(),
                    entry.info.name.clone(),
                    entry.origin.clone(),
                )
            }
        };
        let Some((function, names)) = complete else {
            return Ok(Vec::new());
        };
        if !names.iter().any(|n| n == argument) {
            return Ok(Vec::new());
        }
        let request = serde_json::json!({ "argument": argument, "value": value });
        let answer = self
            .run(&world, &function, &name, &origin, request, ctx)
            .await?;
        shape::completions(answer)
    }

    /// Runs one resource or prompt function: a Lua one on a VM, a native one here.
    async fn run(
        &self,
        world: &Arc<World>,
        function: &ContentFn,
        name: &str,
        origin: &Origin,
        args: Value,
        ctx: &CallContext,
    ) -> Result<Value, ContentError> {
        match function {
            ContentFn::Lua(id) => self.run_lua(world, *id, name, origin, args, ctx).await,
            ContentFn::Native(handler) => self.run_native(world, handler, args, ctx).await,
        }
    }

    /// Runs a native function like a native tool handler: under the `[runtime]
    /// timeout_ms` deadline, dropped when the caller's token is cancelled.
    async fn run_native(
        &self,
        world: &Arc<World>,
        handler: &NativeHandler,
        args: Value,
        ctx: &CallContext,
    ) -> Result<Value, ContentError> {
        let cancel = ctx.cancel.clone();
        if cancel.is_cancelled() {
            return Err(ContentError::Cancelled);
        }
        let budget_ms = timeout_ms(world);
        let ctx = self.with_caller(ctx);
        let call = handler(args, ctx);
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(ContentError::Cancelled),
            answer = tokio::time::timeout(Duration::from_millis(budget_ms), call) => match answer {
                Err(_) => Err(ContentError::Timeout(budget_ms)),
                Ok(Ok(value)) => Ok(value),
                Ok(Err(error)) => Err(ContentError::Handler(error.into_message())),
            },
        }
    }

    /// Runs one resource or prompt function on a VM that holds it, like a tool handler.
    async fn run_lua(
        &self,
        world: &Arc<World>,
        id: LuaFnId,
        name: &str,
        origin: &Origin,
        args: Value,
        ctx: &CallContext,
    ) -> Result<Value, ContentError> {
        let cancel = ctx.cancel.clone();
        if cancel.is_cancelled() {
            return Err(ContentError::Cancelled);
        }
        let budget_ms = timeout_ms(world);
        let domain = match &origin.source {
            Source::Plugin(plugin) => CallerDomain::Plugin {
                id: plugin.clone(),
                may_call_any: world.config.config.plugin_granted(plugin, "call"),
            },
            _ => CallerDomain::Builtin,
        };
        let ctx = self.with_caller(ctx);
        let name = name.to_string();
        let needs = [id];
        let run = world.pool.run(&needs, move |vm| async move {
            let budget = Duration::from_millis(budget_ms);
            let token = ctx.cancel.clone();
            let call = vm.call_handler(id, &name, &domain, &args, &ctx, budget, false);
            vm.cancellable(token, call).await
        });
        let answer = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(ContentError::Cancelled),
            answer = run => answer,
        };
        let outcome = answer.map_err(|gone| ContentError::Handler(gone.0))?;
        match outcome {
            Ok(returned) => Ok(shape::returned_json(returned)),
            // A handler may not answer nil; a `read` may ("nothing there"), so keep it.
            Err(HandlerFailure::Contract(kind)) if kind == "nil" => Ok(Value::Null),
            Err(HandlerFailure::Timeout) => Err(ContentError::Timeout(budget_ms)),
            Err(HandlerFailure::Memory) => Err(ContentError::Handler(
                "the Lua VM ran out of memory".to_string(),
            )),
            Err(HandlerFailure::Raised(message) | HandlerFailure::Contract(message)) => {
                Err(ContentError::Handler(message))
            }
        }
    }
}

/// The deadline of one resource or prompt function: `[runtime] timeout_ms`, as for tools.
fn timeout_ms(world: &World) -> u64 {
    world
        .config
        .config
        .runtime
        .timeout_ms
        .unwrap_or(crate::dispatch::DEFAULT_TIMEOUT_MS)
}
