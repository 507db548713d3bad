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
//! together (`linker/hot-symbols.txt`) and pack their relocations, where the linker can
//! ([`link_layout`]): both shrink what every process maps of the binary.

use std::path::{Path, PathBuf};

fn main() {
    embed_library();
    link_layout();
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

/// Release builds of the binary for x86-64 Linux: the functions of its usual paths first
/// ([`HOT_SYMBOLS`]) and packed relocations, each only when a probe program links (and,
/// for the packed relocations, starts) with it, linked as this build links: the same
/// compiler, target, flags and linker. A linker that does not know an option (GNU ld and
/// gold know neither `--symbol-ordering-file` nor, before 2.38, the packing; Rust's own
/// LLD knows both) then simply gets neither; `TOOLHOST_NO_LINK_LAYOUT=1` turns both off.
fn link_layout() {
    println!("cargo::rerun-if-env-changed=TOOLHOST_NO_LINK_LAYOUT");
    println!("cargo::rerun-if-changed={HOT_SYMBOLS}");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("PROFILE") != "release"
        || var("TARGET") != "x86_64-unknown-linux-gnu"
        || std::env::var_os("TOOLHOST_NO_LINK_LAYOUT").is_some()
    {
        return;
    }
    // The functions a process runs then sit together at the front of `.text`; otherwise
    // they are spread over most of it, and the kernel, which maps a file's pages 64 KiB at
    // a time around each fault, maps most of the binary (12 of 24 MiB of code for a
    // one-shot `call`; docs/performance.md). A name the build does not define is skipped,
    // so a stale list only orders less.
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(HOT_SYMBOLS);
    let path = file.display().to_string();
    let order = [
        format!("-Wl,--symbol-ordering-file={path}"),
        "-Wl,--no-warn-symbol-ordering".to_string(),
    ];
    // `-Wl,` splits its argument at commas.
    if file.is_file() && !path.contains(',') && links("order", &order, false) {
        for arg in order {
            println!("cargo::rustc-link-arg-bins={arg}");
        }
    }
    // 37,000 relative relocations were a 1 MiB table the dynamic loader reads at every
    // start; packed (`DT_RELR`) it is 12 KiB. A glibc older than 2.36 refuses to start such
    // a binary, so the probe must start here: the binary is built where it runs (`cargo
    // install`; docs/install.md says what a binary copied elsewhere needs).
    let packed = ["-Wl,-z,pack-relative-relocs".to_string()];
    if var("HOST") == var("TARGET") && links("relr", &packed, true) {
        println!("cargo::rustc-link-arg-bins={}", packed[0]);
    }
}

/// The ordering file [`link_layout`] hands the linker (made by `scripts/hot-symbols.sh`).
const HOT_SYMBOLS: &str = "linker/hot-symbols.txt";

/// Whether an empty program links with `args` given to the linker as this build's binary
/// is linked (and, with `run`, whether it then starts).
fn links(name: &str, args: &[String], run: bool) -> bool {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let source = out.join("link_probe.rs");
    let program = out.join(format!("link_probe_{name}"));
    if std::fs::write(&source, "fn main() {}\n").is_err() {
        return false;
    }
    let mut probe = std::process::Command::new(var("RUSTC"));
    probe
        .args(["--crate-type=bin", "--edition=2021", "--target"])
        .arg(var("TARGET"))
        .arg("-o")
        .arg(&program)
        .arg(&source);
    // The flags this build gets (`RUSTFLAGS`, `target.*.rustflags`), its linker setting.
    for flag in var("CARGO_ENCODED_RUSTFLAGS").split('\x1f') {
        if !flag.is_empty() {
            probe.arg(flag);
        }
    }
    if let Some(linker) = std::env::var_os("RUSTC_LINKER") {
        let mut flag = std::ffi::OsString::from("-Clinker=");
        flag.push(linker);
        probe.arg(flag);
    }
    for arg in args {
        probe.arg(format!("-Clink-arg={arg}"));
    }
    let quiet = |command: &mut std::process::Command| {
        command
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    };
    quiet(&mut probe) && (!run || quiet(&mut std::process::Command::new(&program)))
}
