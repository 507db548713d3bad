//! `resources/list`, `resources/templates/list`, `resources/read`, `prompts/list`,
//! `prompts/get` and `completion/complete` over the host's Lua resources and prompts
//! (docs/mcp-server.md). Listings are built as JSON and read through rmcp's own types, so
//! the wire shapes are rmcp's for both revisions.
//!
//! Only the resources and prompts of the server's toolset selection exist for its clients;
//! `[serve.oauth.scopes]` applies to reads, renders and completions by toolset, name or
//! URI. A `read` or `render` may ask (`ctx.ask`, …) like a tool handler: in input-request
//! rounds on 2026-07-28, by server→client requests on a 2025-11-25 session.

use super::{McpServer, Shared, input};
use crate::{CompletionTarget, ContentError, PromptInfo, ResourceInfo};
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Reference,
};
use rmcp::service::{RequestContext, RoleServer};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::future::Future;
use std::sync::Arc;

/// Items per page of a listing.
const PAGE: usize = 100;

/// The resources and templates of `shared`'s selection.
fn selected_resources(shared: &Shared) -> Vec<ResourceInfo> {
    let ctx = shared.selection_context();
    let mut resources = shared.host.resources();
    resources.retain(|r| shared.host.content_selected(&r.toolset, &ctx));
    resources
}

/// The prompts of `shared`'s selection.
fn selected_prompts(shared: &Shared) -> Vec<PromptInfo> {
    let ctx = shared.selection_context();
    let mut prompts = shared.host.prompts();
    prompts.retain(|p| shared.host.content_selected(&p.toolset, &ctx));
    prompts
}

/// The resources and templates `shared` lists, as registered (a template's `list` does
/// not run): what a reload compares.
pub(super) fn listed_resources(shared: &Shared) -> Vec<Value> {
    selected_resources(shared)
        .iter()
        .map(|r| json!([r.template, resource_json(r)]))
        .collect()
}

/// The prompts `shared` lists: what a reload compares.
pub(super) fn listed_prompts(shared: &Shared) -> Vec<Value> {
    selected_prompts(shared).iter().map(prompt_json).collect()
}

impl McpServer {
    /// Whether a resource of the selection is registered (the `resources` capability is
    /// advertised).
    pub(super) fn has_resources(&self) -> bool {
        !selected_resources(&self.shared).is_empty()
    }

    /// Whether a prompt of the selection is registered (the `prompts` capability is
    /// advertised).
    pub(super) fn has_prompts(&self) -> bool {
        !selected_prompts(&self.shared).is_empty()
    }

    /// Refuses a request of the caller behind `context` for a resource or prompt of
    /// `toolset` named `names` when its OAuth token lacks a scope `[serve.oauth.scopes]`
    /// asks of it.
    pub(super) fn check_content_scope(
        &self,
        toolset: &str,
        names: &[&str],
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let caller = super::tasks::principal::caller_of(context);
        if caller.scopes().is_none() {
            return Ok(());
        }
        let ctx = self.context().with_caller(caller);
        match self.shared.host.content_missing_scope(toolset, names, &ctx) {
            None => Ok(()),
            Some(scope) => Err(McpError::new(
                rmcp::model::ErrorCode(super::INSUFFICIENT_SCOPE),
                format!(
                    "insufficient scope: {} needs the OAuth scope \"{scope}\"",
                    names.first().copied().unwrap_or_default()
                ),
                Some(json!({ "scope": scope })),
            )),
        }
    }

    /// The scope check of the resource serving `uri` (none serving it: nothing to check,
    /// the read answers not found).
    fn check_resource_scope(
        &self,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        match self.shared.host.resource_serving(uri) {
            Some((key, name, toolset)) => {
                self.check_content_scope(&toolset, &[uri, &key, &name], context)
            }
            None => Ok(()),
        }
    }

    /// The scope check of the prompt `name`.
    fn check_prompt_scope(
        &self,
        name: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let prompts = self.shared.host.prompts();
        match prompts.iter().find(|p| p.name == name) {
            Some(prompt) => self.check_content_scope(&prompt.toolset, &[name], context),
            None => Ok(()),
        }
    }

    /// The context of a read or render of `bound` (`prompt:NAME`, `resource:URI`) with
    /// `args`: the caller, and the asker its input requests go to (2026-07-28: the rounds'
    /// answers, replayed; the returned asker tells which requests it stopped for).
    async fn content_context(
        &self,
        context: &RequestContext<RoleServer>,
        bound: &str,
        args: &Value,
        (request_state, responses): (Option<String>, Option<rmcp::model::InputResponses>),
    ) -> Result<(crate::CallContext, Option<Arc<input::replay::ReplayAsker>>), McpError> {
        let caller = super::tasks::principal::caller_of(context);
        let ctx = self.context().with_caller(caller);
        let continuation =
            self.request_peer(context)
                .is_stateless_revision()
                .then(|| input::Continuation {
                    declared: context.client_capabilities(),
                    request_state,
                    responses,
                });
        self.inputs_of(ctx, bound, continuation.as_ref(), args)
            .await
            .map_err(|refused| refused.to_error())
    }

    pub(super) async fn resources_page(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let mut listed: Vec<Value> = Vec::new();
        for resource in selected_resources(&self.shared) {
            if !resource.template {
                listed.push(resource_json(&resource));
                continue;
            }
            // A template's `list` names its concrete resources; one that fails is logged
            // and left out rather than failing the whole listing.
            let ctx = self.context();
            let named = cancellable(
                &context,
                self.shared.host.list_template(&resource.uri, &ctx),
            );
            match named.await {
                Ok(named) => listed.extend(named.iter().map(resource_json)),
                Err(error) => tracing::warn!("resources/list: {}: {error}", resource.uri),
            }
        }
        listed.sort_by(|a, b| a["uri"].as_str().cmp(&b["uri"].as_str()));
        let (items, next) = page(listed, request)?;
        let hints = self.hints(&context, self.shared.list_ttl_ms);
        wire(json!({ "resources": items, "nextCursor": next }), hints)
    }

    pub(super) fn templates_page(
        &self,
        request: Option<PaginatedRequestParams>,
        context: &RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let templates: Vec<Value> = selected_resources(&self.shared)
            .iter()
            .filter(|r| r.template)
            .map(|r| {
                let mut value = resource_json(r);
                if let Some(map) = value.as_object_mut()
                    && let Some(uri) = map.remove("uri")
                {
                    map.insert("uriTemplate".to_string(), uri);
                }
                value
            })
            .collect();
        let (items, next) = page(templates, request)?;
        let hints = self.hints(context, self.shared.list_ttl_ms);
        wire(
            json!({ "resourceTemplates": items, "nextCursor": next }),
            hints,
        )
    }

    pub(super) async fn read(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.check_resource_scope(&request.uri, &context)?;
        let bound = format!("resource:{}", request.uri);
        let rounds = (request.request_state, request.input_responses);
        let (ctx, replay) = self
            .content_context(&context, &bound, &Value::Null, rounds)
            .await?;
        let modern = self.request_peer(&context).is_stateless_revision();
        let read = self.shared.host.read_resource(&request.uri, &ctx);
        let contents = cancellable(&context, read).await;
        if let Some(asking) = self.input_required(replay, &bound, &Value::Null) {
            return Ok(asking.into());
        }
        let contents = contents.map_err(|e| mcp_error(e, &request.uri, modern))?;
        // A read runs Lua each time: nothing says its contents stay fresh.
        let result: ReadResourceResult =
            wire(json!({ "contents": contents }), self.hints(&context, 0))?;
        Ok(result.into())
    }

    /// The `input_required` result of a read or render that stopped for input.
    fn input_required(
        &self,
        replay: Option<Arc<input::replay::ReplayAsker>>,
        bound: &str,
        args: &Value,
    ) -> Option<rmcp::model::InputRequiredResult> {
        let asker = replay?;
        let pending = asker.take_pending();
        (!pending.is_empty()).then(|| {
            input::input_required(&self.shared.sealer, bound, args, &asker.recorded(), pending)
        })
    }

    pub(super) fn prompts_page(
        &self,
        request: Option<PaginatedRequestParams>,
        context: &RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let prompts: Vec<Value> = selected_prompts(&self.shared)
            .iter()
            .map(prompt_json)
            .collect();
        let (items, next) = page(prompts, request)?;
        let hints = self.hints(context, self.shared.list_ttl_ms);
        wire(json!({ "prompts": items, "nextCursor": next }), hints)
    }

    pub(super) async fn prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        self.check_prompt_scope(&request.name, &context)?;
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let bound = format!("prompt:{}", request.name);
        let rounds = (request.request_state, request.input_responses);
        let (ctx, replay) = self
            .content_context(&context, &bound, &args, rounds)
            .await?;
        let rendered = self
            .shared
            .host
            .get_prompt(&request.name, args.clone(), &ctx);
        let modern = self.request_peer(&context).is_stateless_revision();
        let rendered = cancellable(&context, rendered).await;
        if let Some(asking) = self.input_required(replay, &bound, &args) {
            return Ok(asking.into());
        }
        let rendered = rendered.map_err(|e| mcp_error(e, &request.name, modern))?;
        // A content block rmcp cannot read is the Lua function's mistake: say so.
        let revision = match modern {
            true => Revision::Modern(None),
            false => Revision::Legacy,
        };
        let value = serde_json::to_value(&rendered).unwrap_or_default();
        wire::<GetPromptResult>(value, revision)
            .map(Into::into)
            .map_err(|e| {
                McpError::internal_error(
                    format!(
                        "prompt '{}': render returned a bad content block: {}",
                        request.name, e.message
                    ),
                    None,
                )
            })
    }

    pub(super) async fn completion(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let target = match &request.r#ref {
            Reference::Prompt(prompt) => CompletionTarget::Prompt(prompt.name.clone()),
            Reference::Resource(resource) => CompletionTarget::Resource(resource.uri.clone()),
            _ => {
                return Err(McpError::invalid_params(
                    "completion/complete: ref must be ref/prompt or ref/resource",
                    None,
                ));
            }
        };
        let shown = match &target {
            CompletionTarget::Prompt(name) | CompletionTarget::Resource(name) => name.clone(),
        };
        match &target {
            CompletionTarget::Prompt(name) => self.check_prompt_scope(name, &context)?,
            CompletionTarget::Resource(template) => {
                let resources = self.shared.host.resources();
                if let Some(r) = resources.iter().find(|r| &r.uri == template) {
                    self.check_content_scope(&r.toolset, &[template, &r.name], &context)?;
                }
            }
        }
        let caller = super::tasks::principal::caller_of(&context);
        let ctx = self.context().with_caller(caller);
        let values = self.shared.host.complete(
            &target,
            &request.argument.name,
            &request.argument.value,
            &ctx,
        );
        let modern = self.request_peer(&context).is_stateless_revision();
        let values = cancellable(&context, values)
            .await
            .map_err(|e| mcp_error(e, &shown, modern))?;
        let total = values.len();
        let revision = match modern {
            true => Revision::Modern(None),
            false => Revision::Legacy,
        };
        wire(
            json!({ "completion": { "values": values, "total": total, "hasMore": false } }),
            revision,
        )
    }

    /// The caching hints (SEP-2549) a 2026-07-28 result carries: `ttl_ms` and a private
    /// scope (what a listing holds may depend on the caller); none on older revisions.
    fn hints(&self, context: &RequestContext<RoleServer>, ttl_ms: u64) -> Revision {
        match self.request_peer(context).is_stateless_revision() {
            true => Revision::Modern(Some(ttl_ms)),
            false => Revision::Legacy,
        }
    }
}

/// Runs `work`, giving up when the client cancels the request.
async fn cancellable<T>(
    context: &RequestContext<RoleServer>,
    work: impl Future<Output = Result<T, ContentError>>,
) -> Result<T, ContentError> {
    tokio::select! {
        biased;
        () = context.ct.cancelled() => Err(ContentError::Cancelled),
        out = work => out,
    }
}

fn resource_json(resource: &ResourceInfo) -> Value {
    let mut value = json!({ "uri": resource.uri, "name": resource.name });
    let map = value.as_object_mut().expect("a JSON object literal");
    let optional = [
        ("title", resource.title.clone().map(Value::String)),
        (
            "description",
            resource.description.clone().map(Value::String),
        ),
        ("mimeType", resource.mime_type.clone().map(Value::String)),
        ("annotations", resource.annotations.clone()),
    ];
    for (key, field) in optional {
        if let Some(field) = field {
            map.insert(key.to_string(), field);
        }
    }
    value
}

fn prompt_json(prompt: &PromptInfo) -> Value {
    let mut value = json!({ "name": prompt.name, "arguments": prompt.arguments });
    let map = value.as_object_mut().expect("a JSON object literal");
    if let Some(title) = &prompt.title {
        map.insert("title".to_string(), json!(title));
    }
    if let Some(description) = &prompt.description {
        map.insert("description".to_string(), json!(description));
    }
    value
}

/// One page of `items` after the request's cursor (the index of the first item, as text).
fn page(
    items: Vec<Value>,
    request: Option<PaginatedRequestParams>,
) -> Result<(Vec<Value>, Option<String>), McpError> {
    let start = match request.and_then(|r| r.cursor) {
        None => 0,
        Some(cursor) => cursor
            .parse::<usize>()
            .ok()
            .filter(|start| *start <= items.len())
            .ok_or_else(|| McpError::invalid_params(format!("unknown cursor {cursor:?}"), None))?,
    };
    let end = (start + PAGE).min(items.len());
    let next = (end < items.len()).then(|| end.to_string());
    Ok((items.into_iter().skip(start).take(PAGE).collect(), next))
}

/// The revision a result is written for.
#[derive(Debug, Clone, Copy)]
pub(super) enum Revision {
    /// 2025-11-25 and earlier: no `resultType`, no caching hints.
    Legacy,
    /// 2026-07-28: `resultType: "complete"`, and the caching hints' `ttlMs` when given.
    Modern(Option<u64>),
}

/// `value` read as rmcp's result type, with what `revision` adds.
fn wire<T: DeserializeOwned>(mut value: Value, revision: Revision) -> Result<T, McpError> {
    if let Some(map) = value.as_object_mut() {
        map.retain(|_, v| !v.is_null());
        if let Revision::Modern(hints) = revision {
            map.insert("resultType".to_string(), json!("complete"));
            if let Some(ttl_ms) = hints {
                map.insert("ttlMs".to_string(), json!(ttl_ms));
                map.insert("cacheScope".to_string(), json!("private"));
            }
        }
    }
    serde_json::from_value(value)
        .map_err(|e| McpError::internal_error(format!("cannot encode the result: {e}"), None))
}

/// The JSON-RPC error for a failed read, render or completion: for an unknown URI or name
/// the revision's code (2026-07-28: -32602 with the URI in `data`, SEP-2164; earlier:
/// -32002, resource not found), invalid params for bad arguments, else an internal error;
/// `data` carries the typed kind.
fn mcp_error(error: ContentError, what: &str, modern: bool) -> McpError {
    let data = Some(json!({ "type": error.kind(), "uri": what }));
    match error {
        ContentError::NotFound(_) if modern => McpError::invalid_params(error.to_string(), data),
        ContentError::NotFound(_) => McpError::resource_not_found(error.to_string(), data),
        ContentError::InvalidArguments(_) => McpError::invalid_params(error.to_string(), data),
        _ => McpError::internal_error(error.to_string(), data),
    }
}
