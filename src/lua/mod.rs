//! The Lua runtime: sandboxed VMs, the host API, the `registry` binding, deadlines and
//! sandboxed `require`. It is laid out in rooms, each a folder, lowest first (a room uses
//! only rooms above it in this table; `tests/layers.rs` checks it):
//!
//! | room | what lives there |
//! |---|---|
//! | the files right here | pieces every room uses: JSON ↔ Lua conversion (`convert`), the one-line message of an `mlua::Error` (`error_text`), the byte-order mark (`bom`); |
//! | `call/` | the running call: deadlines (`clock`), timers (`timer`), the current call (`current`) |
//! | `register/` | the `registry.register` binding a tool file calls, its fields (`fields`) and the records a warm start reads (`record`) |
//! | `sandbox/` | sandboxed `require`, the nesting pre-scan (`depth`), bounded Lua patterns |
//! | `api/` | the host API modules (`json`, `fs`, `env`, `proc`, `time`, `store`, `log`) and their stubs |
//! | `vm/` | one VM (`LuaVm`: the state, its bootstrap, loading files, calling handlers) and the pool of VMs; it assembles every room above |
//!
//! This file is the facade the rest of the crate uses; files inside `lua/` name the room
//! they import from instead of going through it.

pub(crate) mod api;
mod bom;
pub(crate) mod call;
pub(crate) mod convert;
mod error_text;
pub(crate) mod register;
pub(crate) mod sandbox;
pub(crate) mod vm;

pub(crate) use api::ApiContext;
pub(crate) use bom::strip_bom_str;
pub(crate) use call::timer;
#[cfg(feature = "cli")] // `toolhost test` reports Lua errors as the host does.
pub(crate) use error_text::lua_error_message;
pub(crate) use register::LoadingFile;
pub(crate) use sandbox::depth;
pub(crate) use sandbox::require::{SearchDir, resolve_module};
pub(crate) use vm::pool::{SpareThread, VmPool};
pub(crate) use vm::{FileSpec, HandlerFailure, LazyFile, LuaVm, ModuleView, Returned, VmSettings};
