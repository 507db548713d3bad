//! The tools whose parameters carry `x-mcp-header`, for rmcp's HTTP transport: before a
//! 2026-07-28 `tools/call` reaches the handler, rmcp asks for the called tool's schema and
//! checks each annotated argument against its `Mcp-Param-*` header (a mismatch, a missing
//! header or a header for an absent argument answers 400 with `-32020`). A tool without
//! annotations has nothing to check, so only annotated tools are kept; the set is rebuilt
//! once per registry generation (rmcp asks on every call, from an async worker).

use super::Shared;
use parking_lot::Mutex;
use rmcp::model::Tool;
use std::collections::HashMap;
use std::sync::Arc;

/// Annotated tools by name.
type Annotated = Arc<HashMap<String, Tool>>;

/// The annotated tools by name, as of one registry generation.
#[derive(Default)]
pub(crate) struct HeaderSchemas(Mutex<Option<(u64, Annotated)>>);

impl HeaderSchemas {
    /// The tool `name` when its parameters carry `x-mcp-header` annotations.
    pub(crate) fn get(&self, shared: &Shared, name: &str) -> Option<Tool> {
        let generation = shared.host.generation();
        let known = match &*self.0.lock() {
            Some((at, tools)) if *at == generation => Some(tools.clone()),
            _ => None,
        };
        let tools = match known {
            Some(tools) => tools,
            None => {
                // As registered (no `check_fn` probe runs): only the schemas matter here.
                let tools = Arc::new(annotated(shared.static_listing()));
                *self.0.lock() = Some((generation, tools.clone()));
                tools
            }
        };
        tools.get(name).cloned()
    }
}

/// The definitions whose parameters mention `x-mcp-header`, by name (registration made
/// sure every annotation is well-formed).
fn annotated(definitions: Vec<serde_json::Value>) -> HashMap<String, Tool> {
    definitions
        .into_iter()
        .filter(|definition| {
            definition
                .get("inputSchema")
                .is_some_and(|schema| schema.to_string().contains("\"x-mcp-header\""))
        })
        .filter_map(|definition| serde_json::from_value::<Tool>(definition).ok())
        .map(|tool| (tool.name.to_string(), tool))
        .collect()
}
