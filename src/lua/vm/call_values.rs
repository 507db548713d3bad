//! Lua values a VM hands every handler call, kept between calls. Each string handed to Lua
//! is created in a protected call of its own (the VM has a memory limit): ≈1.3k
//! instructions apiece, four of them per call (the tool's name, the caller's kind and id,
//! the call's id). A tool's name and a caller's `ctx.caller` metatable are the same from
//! one call to the next, so they are made once.
//!
//! What is kept is never reachable from tool code: a name is an immutable Lua string, and
//! a caller's metatable is hidden behind each call's own proxy table (`__metatable =
//! false`; see `caller_metatable` in bootstrap.lua). A caller with OAuth scopes is never
//! kept: its scopes list is a table its handler may change.

use crate::registry::Caller;
use mlua::{Function, Lua, LuaString, Table};
use parking_lot::Mutex;
use std::collections::HashMap;

/// Names kept at most; past this the cache starts again (a VM serves the tools it holds,
/// so this is only reached by a VM holding more tools than this).
const MAX_NAMES: usize = 4096;

/// Callers kept at most (an HTTP server's few token holders; the local caller on stdio).
const MAX_CALLERS: usize = 8;

/// The kept values of one VM.
#[derive(Default)]
pub(super) struct CallValues {
    names: Mutex<HashMap<Box<str>, LuaString>>,
    callers: Mutex<Vec<(Caller, Table)>>,
}

impl CallValues {
    /// `name` as a Lua string, made once.
    pub(super) fn name(&self, lua: &Lua, name: &str) -> mlua::Result<LuaString> {
        let mut names = self.names.lock();
        if let Some(kept) = names.get(name) {
            return Ok(kept.clone());
        }
        let made = lua.create_string(name)?;
        if names.len() >= MAX_NAMES {
            names.clear();
        }
        names.insert(name.into(), made.clone());
        Ok(made)
    }

    /// The `ctx.caller` metatable of `caller`, made by the bootstrap's `make` once per
    /// caller; `None` for a caller with scopes (the call builds its own).
    pub(super) fn caller(&self, make: &Function, caller: &Caller) -> mlua::Result<Option<Table>> {
        if caller.scopes().is_some() {
            return Ok(None);
        }
        let mut callers = self.callers.lock();
        if let Some((_, kept)) = callers.iter().find(|(kept, _)| kept == caller) {
            return Ok(Some(kept.clone()));
        }
        let made: Table = make.call((caller.kind().as_str(), caller.id(), caller.client_id()))?;
        if callers.len() >= MAX_CALLERS {
            callers.remove(0);
        }
        callers.push((caller.clone(), made.clone()));
        Ok(Some(made))
    }
}
