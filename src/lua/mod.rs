//! The Lua runtime: sandboxed VM construction, the host API, the `registry` binding,
//! JSON ↔ Lua conversion and sandboxed `require`.

pub mod api;
mod clock;
pub mod convert;
pub(crate) mod depth;
mod error_text;
mod patterns;
mod pool;
mod register;
mod require;
pub mod timer;
mod vm;

pub use error_text::lua_error_message;
pub use pool::{Lease, VmPool};
pub use register::{LoadingFile, PendingHook, PendingTool};
pub use require::SearchDir;
pub use vm::{FileSpec, HandlerFailure, LuaVm, Returned, VmSettings};
