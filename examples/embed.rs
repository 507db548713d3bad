//! Embedding toolhost in a Rust agent loop: `cargo run --example embed`.
//!
//! Builds a host over the shipped `tools-lua/`, adds a native Rust tool, a hook and a
//! middleware, prints the definitions a model would get, and runs a batch of calls.

use serde_json::json;
use toolhost::{
    BoxFuture, CallContext, FunctionCall, Hook, HookCall, Host, Middleware, NativeTool, Next,
    PreDecision, Selection, ToolCall, ToolResult,
};

/// Refuses writes outside `scratch/`.
struct ScratchOnly;

impl Hook for ScratchOnly {
    fn pre_tool_call(&self, call: &HookCall<'_>) -> PreDecision {
        let path = call
            .args
            .get("path")
            .and_then(|p| p.as_str())
            .unwrap_or_default();
        if call.tool_name == "write_file" && !path.starts_with("scratch/") {
            return PreDecision::Block(format!("writes go to scratch/, not {path}"));
        }
        PreDecision::Continue
    }
}

/// Logs every execution.
struct Timing;

impl Middleware for Timing {
    fn handle<'a>(&'a self, call: ToolCall, next: Next<'a>) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let started = std::time::Instant::now();
            let name = call.name.clone();
            let result = next.run(call).await;
            eprintln!("{name} took {:?}", started.elapsed());
            result
        })
    }
}

#[tokio::main]
async fn main() -> toolhost::Result<()> {
    let host = Host::builder()
        .tools_dir("tools-lua")
        .native_tool(NativeTool::new(
            "add",
            "math",
            json!({"description": "Add two integers", "parameters": {"type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}),
            |args, _ctx| async move {
                let a = args["a"].as_i64().unwrap_or_default();
                let b = args["b"].as_i64().unwrap_or_default();
                Ok(json!((a + b).to_string()))
            },
        ).parallel_safe(true))
        .hook(ScratchOnly)
        .middleware(Timing)
        .build()?;

    let selection = Selection::default().with_toolsets(["data", "math"]);
    let definitions = host.tool_definitions(&selection);
    println!("{} definitions for the model:", definitions.len());
    for definition in definitions.iter() {
        println!("  {}", definition["function"]["name"]);
    }

    let ctx = CallContext::default();
    let results = host
        .handle_function_calls(
            vec![
                FunctionCall::new("add", json!({"a": "2", "b": 40})),
                FunctionCall::new("calc", json!({"expression": "2 ^ 10"})),
                FunctionCall::new("write_file", json!({"path": "/etc/motd", "content": "x"})),
            ],
            &ctx,
        )
        .await;
    for result in results {
        println!("{result}");
    }
    Ok(())
}
