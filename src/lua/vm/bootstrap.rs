//! The bootstrap every VM runs first (`bootstrap.lua`: environments, the call wrapper,
//! safe replacements of a few standard functions). `build.rs` compiles it to bytecode, so
//! a VM does not parse it: that parse was ≈7 % of a warm one-shot `call` at 133 tools, and
//! every VM of a pool or a reload paid it.

use crate::lua::error_text::BOOTSTRAP_NAME;
use mlua::{Function, Lua};

/// The bootstrap's source, and its bytecode as compiled by `build.rs` from the same file.
const BOOTSTRAP_SOURCE: &str = include_str!("bootstrap.lua");
const BOOTSTRAP_BYTECODE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/bootstrap.luac"));

/// The bootstrap chunk: its bytecode from the build (no parse), or its source when this
/// Lua cannot load that bytecode.
pub(super) fn chunk(lua: &Lua) -> mlua::Result<Function> {
    chunk_from(lua, BOOTSTRAP_BYTECODE)
}

fn chunk_from(lua: &Lua, bytecode: &[u8]) -> mlua::Result<Function> {
    lua.load(bytecode)
        .set_name(BOOTSTRAP_NAME)
        .set_mode(mlua::chunk::ChunkMode::Binary)
        .into_function()
        .or_else(|e| {
            tracing::debug!("bootstrap bytecode not loadable ({e}); parsing its source");
            lua.load(BOOTSTRAP_SOURCE)
                .set_name(BOOTSTRAP_NAME)
                .set_mode(mlua::chunk::ChunkMode::Text)
                .into_function()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_bytecode_loads() {
        let lua = Lua::new();
        let loaded = lua
            .load(BOOTSTRAP_BYTECODE)
            .set_mode(mlua::chunk::ChunkMode::Binary)
            .into_function();
        assert!(loaded.is_ok(), "{:?}", loaded.err());
    }

    #[test]
    fn bytecode_this_lua_cannot_load_falls_back_to_the_source() {
        let lua = Lua::new();
        let function = chunk_from(&lua, b"\x1bLua not really bytecode").expect("from source");
        let info = function.info();
        assert_eq!(info.source.as_deref(), Some(BOOTSTRAP_NAME));
    }
}
