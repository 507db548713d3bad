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

mod bounded_read;
#[cfg(feature = "cli")]
pub mod cli;
pub mod config;
pub mod definitions;
pub mod discovery;
pub mod dispatch;
pub mod error;
pub mod host;
pub mod lua;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod native;
pub mod registry;
pub mod search;
pub mod toolsets;

pub use config::{Config, LoadedConfig};
pub use definitions::{Definitions, Format, Selection};
pub use dispatch::{ErrorType, ToolResult};
pub use error::{Error, Result};
pub use host::{FunctionCall, Host, HostBuilder, ReloadEvent, Watch};
pub use native::NativeTool;
pub use registry::{CallContext, ToolEntry};
