//! Compiles `src/lua/vm/bootstrap.lua` (the glue every VM runs first) to Lua bytecode at build
//! time. Parsing its 14 KB of source was ≈7 % of a warm one-shot `call` at 133 tools, paid
//! again by every VM a pool or a reload creates. The bytecode is our own build's output,
//! never read from anywhere else; a VM that cannot load it (a Lua built differently for
//! another target) parses the source instead.

use std::path::PathBuf;

fn main() {
    println!("cargo::rerun-if-changed=src/lua/vm/bootstrap.lua");
    let source = std::fs::read_to_string("src/lua/vm/bootstrap.lua")
        .unwrap_or_else(|e| panic!("cannot read src/lua/vm/bootstrap.lua: {e}"));
    let lua = mlua::Lua::new();
    let function = lua
        .load(&source)
        .set_name("=toolhost-bootstrap")
        .into_function()
        .unwrap_or_else(|e| panic!("src/lua/vm/bootstrap.lua does not compile: {e}"));
    // Debug information kept: errors raised in the bootstrap name their lines as before.
    let bytecode = function.dump(false);
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("bootstrap.luac"), bytecode)
        .unwrap_or_else(|e| panic!("cannot write the bootstrap bytecode: {e}"));
}
