//! The Lua runtime: sandboxed VM construction, the host API, the `registry` binding,
//! JSON ↔ Lua conversion and sandboxed `require`.

pub(crate) mod api;
mod bom;
mod clock;
pub(crate) mod convert;
pub(crate) mod current;
pub(crate) mod depth;
mod error_text;
mod patterns;
mod pool;
pub(crate) mod register;
mod require;
pub(crate) mod timer;
pub(crate) mod vm;

pub(crate) use bom::{strip_bom, strip_bom_str};
pub(crate) use error_text::lua_error_message;
pub(crate) use pool::VmPool;
pub(crate) use register::LoadingFile;
pub(crate) use require::{SearchDir, resolve_module};
pub(crate) use vm::{FileSpec, HandlerFailure, LazyFile, LuaVm, ModuleView, Returned, VmSettings};
