//! The MCP server: `toolhost serve` speaks the Model Context Protocol over stdio (rmcp),
//! so any MCP client can list and call the Lua tools.
//!
//! - `tools/list` returns exactly the `mcp`-format definitions of the selection (SPEC §5);
//! - `tools/call` runs the whole pipeline; a host error object comes back as
//!   `isError: true` with the error JSON as text; text results as text content; a JSON
//!   object result also as `structuredContent`; multimodal envelopes as content blocks;
//! - `notifications/cancelled` stops the call (its coroutine is dropped);
//! - with a reload event stream, each reload sends `notifications/tools/list_changed`.
//!
//! Logs go to stderr only: stdout is the protocol. Every line from the client passes the
//! [`guard`] first, so every request gets an answer.

pub(crate) mod guard;

use crate::definitions::{Format, Selection};
use crate::dispatch::ToolResult;
use crate::host::Host;
use crate::registry::CallContext;
use rmcp::ErrorData as McpError;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value};

/// Serves one host to one MCP client.
#[derive(Clone)]
pub(crate) struct McpServer {
    host: Host,
    selection: Selection,
}

impl McpServer {
    /// A server offering `selection` of `host`'s tools (its format is forced to `mcp`).
    pub(crate) fn new(host: Host, selection: Selection) -> Self {
        Self {
            host,
            selection: Selection {
                format: Format::Mcp,
                ..selection
            },
        }
    }

    fn context(&self) -> CallContext {
        CallContext {
            scope: self.selection.scope.clone(),
            toolsets: self.selection.enabled.clone(),
            disabled_toolsets: self.selection.disabled.clone(),
            ..CallContext::default()
        }
    }

    /// The MCP `Tool` list of the selection.
    pub(crate) fn tools(&self) -> Vec<Tool> {
        self.host
            .tool_definitions(&self.selection)
            .iter()
            .filter_map(
                |definition| match serde_json::from_value::<Tool>((**definition).clone()) {
                    Ok(tool) => Some(tool),
                    Err(e) => {
                        tracing::warn!("definition cannot be offered over MCP: {e}: {definition}");
                        None
                    }
                },
            )
            .collect()
    }
}

/// Maps a pipeline result to an MCP tool result: text and structured results as text
/// content, an error as `isError: true` with the error JSON as text, a multimodal envelope
/// as content blocks.
pub(crate) fn to_call_result(result: ToolResult) -> CallToolResult {
    match result {
        ToolResult::Multimodal(Value::Object(envelope)) => {
            CallToolResult::success(multimodal_blocks(&envelope))
        }
        ToolResult::Error(error) => {
            CallToolResult::error(vec![ContentBlock::text(error.to_json().to_string())])
        }
        other => {
            let text = match other.into_json() {
                Value::String(text) => text,
                value => value.to_string(),
            };
            CallToolResult::success(vec![ContentBlock::text(text)])
        }
    }
}

/// The blocks of a multimodal envelope: `{type = "text", text}` and
/// `{type = "image", data, mime_type | mimeType}` parts; anything else as its JSON text. An
/// envelope without parts falls back to its `text_summary`.
fn multimodal_blocks(envelope: &Map<String, Value>) -> Vec<ContentBlock> {
    let parts = envelope
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut blocks: Vec<ContentBlock> = parts
        .iter()
        .map(|part| {
            let field = |name: &str| part.get(name).and_then(Value::as_str);
            match field("type") {
                Some("text") => ContentBlock::text(field("text").unwrap_or_default()),
                Some("image") => ContentBlock::image(
                    field("data").unwrap_or_default(),
                    field("mime_type")
                        .or_else(|| field("mimeType"))
                        .unwrap_or("application/octet-stream"),
                ),
                _ => ContentBlock::text(part.to_string()),
            }
        })
        .collect();
    if blocks.is_empty() {
        let summary = envelope
            .get("text_summary")
            .and_then(Value::as_str)
            .unwrap_or_default();
        blocks.push(ContentBlock::text(summary));
    }
    blocks
}

impl Host {
    /// Serves `selection` of this host's tools over MCP on `input`/`output`
    /// (newline-delimited JSON-RPC, as on stdio: `toolhost serve` passes stdin and stdout)
    /// until the client closes `input`. Every reload — by a [`Watch`](crate::Watch) or
    /// [`Host::reload`] — sends the client `notifications/tools/list_changed`.
    ///
    /// ```no_run
    /// # async fn demo(host: toolhost::Host) -> toolhost::Result<()> {
    /// let stdin = tokio::io::BufReader::new(tokio::io::stdin());
    /// host.serve_mcp(toolhost::Selection::default(), stdin, tokio::io::stdout()).await
    /// # }
    /// ```
    pub async fn serve_mcp<R, W>(
        &self,
        selection: Selection,
        input: R,
        output: W,
    ) -> crate::Result<()>
    where
        R: tokio::io::AsyncBufRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let max_line_bytes = self
            .config()
            .config
            .serve
            .max_request_bytes
            .unwrap_or(guard::DEFAULT_MAX_LINE_BYTES);
        let mut reloads = self.reload_events();
        let mut notifier = None;
        let server = McpServer::new(self.clone(), selection);
        let served = guard::serve(server, input, output, max_line_bytes, |peer| {
            let peer = peer.clone();
            notifier = Some(tokio::spawn(async move {
                loop {
                    match reloads.recv().await {
                        Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                    }
                    if let Err(e) = peer.notify_tool_list_changed().await {
                        tracing::warn!("cannot send tools/list_changed: {e}");
                        break;
                    }
                }
            }));
        })
        .await;
        if let Some(notifier) = notifier {
            notifier.abort();
        }
        served
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = Implementation::from_build_env();
        info.name = "toolhost".into();
        info.version = env!("CARGO_PKG_VERSION").into();
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(info)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        // Definitions may run `check_fn` probes (Lua): never on an async worker.
        let server = self.clone();
        let tools = tokio::task::spawn_blocking(move || server.tools())
            .await
            .map_err(|e| McpError::internal_error(format!("listing tools failed: {e}"), None))?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.map(Value::Object).unwrap_or_default();
        let mut ctx = self.context();
        ctx.tool_call_id = Some(format!("{:?}", context.id));
        // `notifications/cancelled` cancels rmcp's token for this request: the host stops
        // the call and answers `cancelled`.
        ctx.cancel = context.ct.clone();
        let result = self
            .host
            .handle_function_call(&request.name, args, &ctx)
            .await;
        Ok(to_call_result(result).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::{ErrorType, ToolError};
    use serde_json::json;

    #[test]
    fn results_map_to_mcp_shapes() {
        let text = to_call_result(ToolResult::Text("hi".into()));
        assert_eq!(text.is_error, Some(false));
        let error = to_call_result(ToolError::new(ErrorType::Timeout, "x").into());
        assert_eq!(error.is_error, Some(true));
        let image = to_call_result(ToolResult::Multimodal(
            json!({"_multimodal": true, "content": [
            {"type": "text", "text": "a"}, {"type": "image", "data": "AAAA", "mime_type": "image/png"}]}),
        ));
        assert_eq!(image.content.len(), 2);
        let serialized = serde_json::to_value(&image).unwrap();
        assert_eq!(serialized["content"][1]["type"], "image");
        assert_eq!(serialized["content"][1]["mimeType"], "image/png");
    }
}
