//! Compiles `src/lua/vm/bootstrap.lua` (the glue every VM runs first) to Lua bytecode at build
//! time. Parsing its 14 KB of source was ≈7 % of a warm one-shot `call` at 133 tools, paid
//! again by every VM a pool or a reload creates. The bytecode is our own build's output,
//! never read from anywhere else; a VM that cannot load it (a Lua built differently for
//! another target) parses the source instead.
//!
//! It also writes the table of the shipped tool library (`tools-lua/`), which the binary
//! embeds with `include_bytes!`, so an installed `toolhost` needs no files beside it.

use std::path::{Path, PathBuf};

fn main() {
    embed_library();
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

/// Writes `$OUT_DIR/library.rs`: one `LibraryFile` per file under `tools-lua/` (sorted by
/// path; names starting with `.` are editor and OS litter, left out).
fn embed_library() {
    // A directory as rerun-if-changed: cargo reruns when any file under it changes.
    println!("cargo::rerun-if-changed=tools-lua");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools-lua");
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    files.sort();
    let mut table = String::from("&[\n");
    for relative in &files {
        let absolute = root.join(relative);
        table.push_str(&format!(
            "    LibraryFile {{ path: {relative:?}, contents: include_bytes!({:?}) }},\n",
            absolute.display().to_string()
        ));
    }
    table.push(']');
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("library.rs"), table)
        .unwrap_or_else(|e| panic!("cannot write the library table: {e}"));
}

/// The files under `dir`, as `/`-separated paths relative to `root`.
fn collect(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    for entry in entries {
        let entry = entry.unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        if path.is_dir() {
            collect(root, &path, out);
        } else if path.is_file() {
            let relative = path.strip_prefix(root).expect("under root");
            let parts: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            out.push(parts.join("/"));
        }
    }
}
