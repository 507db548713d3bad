//! # toolhost
//!
//! A host for LLM-agent tools written in Lua. A tool author drops `tools-lua/NAME.lua`
//! calling `registry.register{...}` at top level; toolhost discovers it (a `full_moon`
//! parse confirms the top-level call before anything runs), executes only such files in a
//! sandboxed Lua VM, and dispatches calls to their handlers.
//!
//! ```no_run
//! # async fn demo() -> toolhost::Result<()> {
//! use toolhost::{CallContext, Host};
//! let host = Host::builder().tools_dir("tools-lua").build()?;
//! let out = host
//!     .handle_function_call("echo", serde_json::json!({"text": "hi"}), &CallContext::default())
//!     .await;
//! println!("{out}");
//! # Ok(()) }
//! ```
//!
//! Layering (each layer imports only those before it): `registry` ← `lua` ← `discovery`
//! ← `toolsets` ← `search` ← `definitions` ← `dispatch` ← `host` ← CLI / `mcp`.

#![deny(unreachable_pub)]

mod bounded_read;
#[cfg(feature = "cli")]
pub mod cli;
mod config;
mod definitions;
mod discovery;
mod dispatch;
mod error;
mod host;
mod lua;
#[cfg(feature = "mcp")]
mod mcp;
mod native;
mod registry;
mod search;
mod toolsets;

pub use definitions::{Definitions, Format, Selection};
pub use discovery::{Reason, Verdict};
pub use dispatch::{
    ApprovalRequest, Approver, BoxFuture, CallStatus, ErrorType, Hook, HookCall, Middleware, Next,
    PostCall, PreDecision, ToolCall, ToolError, ToolResult,
};
pub use error::{Error, LoadError, Result};
#[cfg(feature = "watch")]
pub use host::Watch;
pub use host::{FunctionCall, Host, HostBuilder, ReloadEvent, ToolInfo};
pub use native::NativeTool;
pub use registry::{CallContext, ResultLimit};
