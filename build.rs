//! Compiles `src/lua/vm/bootstrap.lua` (the glue every VM runs first) to Lua bytecode at build
//! time. Parsing its 14 KB of source was ≈7 % of a warm one-shot `call` at 133 tools, paid
//! again by every VM a pool or a reload creates. The bytecode is our own build's output,
//! never read from anywhere else; a VM that cannot load it (a Lua built differently for
//! another target) parses the source instead.
//!
//! It also writes the table of the shipped tool library (`tools-lua/`), which the binary
//! embeds with `include_bytes!`, so an installed `toolhost` needs no files beside it.
//!
//! And release builds of the binary on x86-64 Linux put the functions of its usual paths
//! together (`linker/hot-symbols.txt`, see [`order_hot_symbols`]) and pack their relocations
//! ([`pack_relocations`]): both shrink what every process maps of the binary.

use std::path::{Path, PathBuf};

fn main() {
    embed_library();
    if default_release_linker() {
        order_hot_symbols();
        pack_relocations();
    }
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

/// Whether this is a release build of the binary for x86-64 Linux with Rust's default
/// linker (LLD since Rust 1.90), whose options [`order_hot_symbols`] and
/// [`pack_relocations`] use. Another linker (a `-C linker`, `-fuse-ld` or linker setting in
/// the flags) may not know them, so nothing is passed then; `TOOLHOST_NO_LINK_LAYOUT=1`
/// turns both off by hand.
fn default_release_linker() -> bool {
    println!("cargo::rerun-if-env-changed=TOOLHOST_NO_LINK_LAYOUT");
    println!("cargo::rerun-if-env-changed=CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    var("PROFILE") == "release"
        && var("TARGET") == "x86_64-unknown-linux-gnu"
        && var("HOST") == "x86_64-unknown-linux-gnu"
        && std::env::var_os("TOOLHOST_NO_LINK_LAYOUT").is_none()
        && std::env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_none()
        && !flags.contains("linker")
        && !flags.contains("fuse-ld")
        && rustc_minor().is_some_and(|minor| minor >= 90)
}

/// Hands `linker/hot-symbols.txt` (made by `scripts/hot-symbols.sh`) to the linker as its
/// symbol ordering file. The functions a process runs then sit together at the front of
/// `.text`; otherwise they are spread over most of it, and the kernel, which maps a file's
/// pages 64 KiB at a time around each fault, maps most of the binary (12 of 24 MiB of code
/// for a one-shot `call`; docs/performance.md). A name the build does not define is skipped,
/// so a stale list only orders less.
fn order_hot_symbols() {
    println!("cargo::rerun-if-changed=linker/hot-symbols.txt");
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("linker/hot-symbols.txt");
    let path = file.display().to_string();
    // `-Wl,` splits its argument at commas.
    if file.is_file() && !path.contains(',') {
        println!("cargo::rustc-link-arg-bins=-Wl,--symbol-ordering-file={path}");
        println!("cargo::rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

/// Packs the binary's relative relocations (`-z pack-relative-relocs`, `DT_RELR`): 37,000
/// of them were a 1 MiB table the dynamic loader reads at every start. Only when this
/// machine's C library is glibc 2.36 or later, which understands the packed form (an older
/// one refuses to start such a binary) — the binary is built where it runs (`cargo install`).
fn pack_relocations() {
    let output = std::process::Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output();
    let text = output
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .unwrap_or_default();
    // "glibc 2.36"
    let version = text.trim().strip_prefix("glibc ").unwrap_or_default();
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    let new_enough = matches!(
        (parts.next().flatten(), parts.next().flatten()),
        (Some(major), Some(minor)) if (major, minor) >= (2, 36)
    );
    if new_enough {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// The minor version of the compiler building this crate (`rustc 1.95.0 (…)` → 95).
fn rustc_minor() -> Option<u32> {
    let rustc = std::env::var_os("RUSTC")?;
    let output = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let version = text.split_whitespace().nth(1)?;
    let mut parts = version.split('.');
    (parts.next()? == "1").then_some(())?;
    parts.next()?.parse().ok()
}
