//! `resources/list`, `resources/templates/list`, `resources/read`, `prompts/list`,
//! `prompts/get` and `completion/complete` over the host's Lua resources and prompts
//! (docs/mcp-server.md). Listings are built as JSON and read through rmcp's own types, so
//! the wire shapes are rmcp's for both revisions.

use super::McpServer;
use crate::{CompletionTarget, ContentError, PromptInfo, ResourceInfo};
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResult, Reference,
};
use rmcp::service::{RequestContext, RoleServer};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::future::Future;

/// Items per page of a listing.
const PAGE: usize = 100;

impl McpServer {
    /// Whether any resource is registered (the `resources` capability is advertised).
    pub(super) fn has_resources(&self) -> bool {
        !self.shared.host.resources().is_empty()
    }

    /// Whether any prompt is registered (the `prompts` capability is advertised).
    pub(super) fn has_prompts(&self) -> bool {
        !self.shared.host.prompts().is_empty()
    }

    pub(super) async fn resources_page(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let mut listed: Vec<Value> = Vec::new();
        for resource in self.shared.host.resources() {
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
        let templates: Vec<Value> = self
            .shared
            .host
            .resources()
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
    ) -> Result<ReadResourceResult, McpError> {
        let ctx = self.context();
        let modern = self.request_peer(&context).is_stateless_revision();
        let read = self.shared.host.read_resource(&request.uri, &ctx);
        let contents = cancellable(&context, read)
            .await
            .map_err(|e| mcp_error(e, &request.uri, modern))?;
        // A read runs Lua each time: nothing says its contents stay fresh.
        wire(json!({ "contents": contents }), self.hints(&context, 0))
    }

    pub(super) fn prompts_page(
        &self,
        request: Option<PaginatedRequestParams>,
        context: &RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let prompts: Vec<Value> = self.shared.host.prompts().iter().map(prompt_json).collect();
        let (items, next) = page(prompts, request)?;
        let hints = self.hints(context, self.shared.list_ttl_ms);
        wire(json!({ "prompts": items, "nextCursor": next }), hints)
    }

    pub(super) async fn prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResult, McpError> {
        let ctx = self.context();
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let rendered = self.shared.host.get_prompt(&request.name, args, &ctx);
        let modern = self.request_peer(&context).is_stateless_revision();
        let rendered = cancellable(&context, rendered)
            .await
            .map_err(|e| mcp_error(e, &request.name, modern))?;
        // A content block rmcp cannot read is the Lua function's mistake: say so.
        let revision = match modern {
            true => Revision::Modern(None),
            false => Revision::Legacy,
        };
        let value = serde_json::to_value(&rendered).unwrap_or_default();
        wire(value, revision).map_err(|e| {
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
        let ctx = self.context();
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
