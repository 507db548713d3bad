//! # toolhost
//!
//! A host for LLM-agent tools written in Lua. A tool author drops `tools-lua/NAME.lua`
//! calling `registry.register{...}` at top level; toolhost discovers it (a `full_moon`
//! parse confirms the top-level call before anything runs), executes only such files in a
//! sandboxed Lua VM, offers their JSON schemas to models and runs every call through one
//! pipeline: coercion, hooks, approval, validation, middleware, the handler under a
//! deadline, result limits.
//!
//! This page is the guide for Rust programs that embed it. Every example runs as a test.
//!
//! ## Quick start
//!
//! Build a [`Host`] over a tool directory, hand the model its [`tool_definitions`], run
//! the calls the model makes with [`handle_function_call`]:
//!
//! ```
//! use serde_json::json;
//! use toolhost::{CallContext, Host, Selection, ToolResult};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("greet.lua"), r#"
//! registry.register{
//!   name = "greet", toolset = "demo",
//!   schema = { description = "Greet someone",
//!              parameters = { type = "object", properties = { who = { type = "string" } },
//!                             required = { "who" } } },
//!   handler = function(args) return "Hello, " .. args.who .. "!" end,
//! }"#)?;
//!
//! let host = Host::builder().tools_dir(dir.path()).default_config().build()?;
//! let definitions = host.tool_definitions(&Selection::default()); // OpenAI format
//! assert_eq!(definitions[0]["function"]["name"], "greet");
//!
//! let runtime = tokio::runtime::Runtime::new()?;
//! let ctx = CallContext::default();
//! let out = runtime.block_on(host.handle_function_call("greet", json!({"who": "Ada"}), &ctx));
//! assert_eq!(out, ToolResult::Text("Hello, Ada!".into()));
//!
//! // Every failure is a typed result, never a panic: here validation refused the call.
//! let refused = runtime.block_on(host.handle_function_call("greet", json!({}), &ctx));
//! assert_eq!(refused.error_type(), Some(toolhost::ErrorType::InvalidArguments));
//! // What a model reads: the error JSON of docs/calls.md.
//! assert_eq!(refused.to_json()["error_type"], "invalid_arguments");
//! # Ok(()) }
//! ```
//!
//! A file that fails to load never stops the host: its [`LoadError`] (file, line, field)
//! is in [`Host::discovery`] and every other tool is served.
//!
//! ## Native tools
//!
//! A [`NativeTool`] is a Rust async handler with the same fields as a Lua registration; it
//! goes through the same pipeline.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! use serde_json::json;
//! use toolhost::{CallContext, Host, NativeTool, ToolResult};
//!
//! let add = NativeTool::new(
//!     "add",
//!     "math",
//!     json!({"description": "Add two integers", "parameters": {"type": "object",
//!         "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}),
//!     |args, _ctx| async move {
//!         let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
//!         Ok(json!(sum.to_string()))
//!     },
//! );
//! let host = Host::builder().tools_dir(dir.path()).default_config().native_tool(add).build()?;
//! let runtime = tokio::runtime::Runtime::new()?;
//! // "2" is coerced to the integer the schema asks for.
//! let out = runtime.block_on(host.handle_function_call(
//!     "add", json!({"a": "2", "b": 40}), &CallContext::default()));
//! assert_eq!(out, ToolResult::Text("42".into()));
//! # Ok(()) }
//! ```
//!
//! ## Hooks, middleware and approval
//!
//! A [`Hook`] sees every call before and after it runs (and may block or modify it); a
//! [`Middleware`] wraps execution; an [`Approver`] answers for tools that need approval.
//! None of them can panic the pipeline: a panicking hook or approver fails closed.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! use serde_json::json;
//! use toolhost::*;
//!
//! /// No writes outside scratch/.
//! struct ScratchOnly;
//! impl Hook for ScratchOnly {
//!     fn pre_tool_call(&self, call: &HookCall<'_>) -> PreDecision {
//!         match call.args["path"].as_str() {
//!             Some(path) if !path.starts_with("scratch/") => {
//!                 PreDecision::Block(format!("writes go to scratch/, not {path}"))
//!             }
//!             _ => PreDecision::Continue,
//!         }
//!     }
//! }
//!
//! /// Appends how long the handler took.
//! struct Timing;
//! impl Middleware for Timing {
//!     fn handle<'a>(&'a self, call: ToolCall, next: Next<'a>) -> BoxFuture<'a, ToolResult> {
//!         Box::pin(async move {
//!             let started = std::time::Instant::now();
//!             let result = next.run(call).await;
//!             tracing::debug!("took {:?}", started.elapsed());
//!             result
//!         })
//!     }
//! }
//!
//! /// Says yes to everything but `rm`.
//! struct NoRm;
//! impl Approver for NoRm {
//!     fn approve(&self, request: &ApprovalRequest<'_>) -> bool {
//!         request.tool_name != "rm"
//!     }
//! }
//!
//! let write = NativeTool::new("write", "fs", json!({"parameters": {"type": "object"}}),
//!     |_args, _ctx| async { Ok(json!("written")) });
//! let rm = NativeTool::new("rm", "fs", json!({"parameters": {"type": "object"}}),
//!     |_args, _ctx| async { Ok(json!("removed")) }).requires_approval(true);
//! let host = Host::builder()
//!     .tools_dir(dir.path())
//!     .default_config()
//!     .native_tool(write)
//!     .native_tool(rm)
//!     .hook(ScratchOnly)
//!     .middleware(Timing)
//!     .approver(NoRm)
//!     .build()?;
//! let runtime = tokio::runtime::Runtime::new()?;
//! let ctx = CallContext::default();
//! let call = |name: &str, args| runtime.block_on(host.handle_function_call(name, args, &ctx));
//! assert_eq!(call("write", json!({"path": "scratch/a"})), ToolResult::Text("written".into()));
//! assert_eq!(call("write", json!({"path": "/etc/passwd"})).error_type(), Some(ErrorType::Blocked));
//! assert_eq!(call("rm", json!({})).error_type(), Some(ErrorType::ApprovalDenied));
//! # Ok(()) }
//! ```
//!
//! ## Batches and cancellation
//!
//! [`handle_function_calls`] runs one model turn's calls: consecutive `parallel_safe` calls
//! at once, the others alone, results in request order. Cancelling the context's token
//! ([`CallContext::cancel`]) ends a call at once with [`ErrorType::Cancelled`] and stops
//! whatever it runs (a Lua loop, a hook, a `proc.run` child).
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! use serde_json::json;
//! use toolhost::{CallContext, ErrorType, FunctionCall, Host};
//!
//! std::fs::write(dir.path().join("spin.lua"), r#"
//! registry.register{ name = "spin", toolset = "demo", schema = { parameters = { type = "object" } },
//!   handler = function() while true do end end }"#)?;
//! let host = Host::builder().tools_dir(dir.path()).default_config().build()?;
//! let runtime = tokio::runtime::Runtime::new()?;
//!
//! let ctx = CallContext::default();
//! let cancel = ctx.cancel.clone();
//! let results = runtime.block_on(async {
//!     let batch = host.handle_function_calls(
//!         vec![FunctionCall::new("spin", json!({})), FunctionCall::new("nope", json!({}))],
//!         &ctx,
//!     );
//!     let stop = async {
//!         tokio::time::sleep(std::time::Duration::from_millis(50)).await;
//!         cancel.cancel();
//!     };
//!     tokio::join!(batch, stop).0
//! });
//! assert_eq!(results[0].error_type(), Some(ErrorType::Cancelled));
//! assert_eq!(results[1].error_type(), Some(ErrorType::Cancelled));
//! # Ok(()) }
//! ```
//!
//! ## Hot reload
//!
//! [`Host::watch`] reloads on every change of the tool directories or the configuration
//! and yields a [`ReloadEvent`] each time; [`Host::reload`] does one reload now. A call in
//! flight finishes on the tools it started with; a file that breaks keeps serving its last
//! good version.
//!
//! ```no_run
//! # async fn demo(host: toolhost::Host) -> toolhost::Result<()> {
//! let mut events = host.watch()?;
//! while let Some(event) = events.next().await {
//!     println!("{}", event.summary()); // reload: +new_tool ~changed, 1 error, 12 ms
//!     for error in &event.errors {
//!         eprintln!("{error}"); // tools-lua/x.lua:3: register: 'name' ...
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! ## Features
//!
//! `cli` (the `toolhost` binary), `mcp` ([`Host::serve_mcp`]), `watch` ([`Host::watch`]);
//! all on by default. `default-features = false` builds the library alone: mlua,
//! full_moon, serde_json, tokio, jsonschema and little else.
//!
//! [`tool_definitions`]: Host::tool_definitions
//! [`handle_function_call`]: Host::handle_function_call
//! [`handle_function_calls`]: Host::handle_function_calls
//!
//! Layering (each layer imports only those before it; the full order is in CONTRIBUTING.md
//! and checked by `tests/layers.rs`): `registry` ← `lua` ← `discovery` ← the tool sources
//! (native tools, other MCP servers) ← `toolsets` ← `search` ← `definitions` ← `dispatch`
//! ← `host` ← this facade ← CLI / `mcp`.

#![deny(unreachable_pub)]
#![deny(missing_docs)]

mod blocking;
mod bounded_read;
#[cfg(feature = "cli")]
pub mod cli;
mod config;
mod definitions;
mod digest;
mod discovery;
mod dispatch;
mod env_vars;
mod error;
mod fs_roots;
mod host;
mod inline_task;
mod json_type;
mod library;
mod lua;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(feature = "mcp-client")]
mod mcp_client;
mod mru;
mod native;
mod pack;
mod registry;
#[cfg(feature = "rig")]
mod rig;
mod search;
#[cfg(feature = "mcp")]
mod shutdown;
mod store;
mod telemetry;
mod toolsets;

pub use definitions::{Definitions, Format, Selection, UnknownFormat};
pub use discovery::{Reason, Verdict};
pub use dispatch::{
    ApprovalRequest, Approver, BoxFuture, CallStatus, ErrorType, Hook, HookCall, Middleware, Next,
    PostCall, PreDecision, ToolCall, ToolError, ToolResult,
};
pub use error::{Error, LoadError, Result};
#[cfg(feature = "watch")]
pub use host::Watch;
pub use host::{
    CompletionTarget, ContentError, FunctionCall, Host, HostBuilder, PromptInfo, PromptMessage,
    ReloadEvent, RenderedPrompt, ResourceContents, ResourceInfo, ToolInfo,
};
pub use library::{LibraryFile, library_files};
#[cfg(feature = "http")]
pub use mcp::server::http::HttpOptions;
pub use native::{NativePrompt, NativeResource, NativeTool};
pub use pack::{
    FileChange, LOCK_FILE, LockedPack, MANIFEST_FILE, PACKS_DIR, PackError, PackLock, PackManifest,
    hash_tree,
};
pub use registry::{
    Annotations, AskFuture, Asker, CallContext, CallObserver, Caller, CallerKind, Capability,
    HandlerError, InputAnswer, InputKind, InputRequest, LogLevel, LogLine, Progress,
    PromptArgument, ResultLimit, Root, Sampled, ScriptedAsker, TaskSupport, ToolsetSelection,
};
pub use store::{Store, StoreError};
pub use telemetry::metric::describe as enable_metrics;
