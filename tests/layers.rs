//! The layer order (CONTRIBUTING.md), checked from the code's own `crate::` paths: a module
//! imports only modules on its layer's left, and no two files import each other, directly
//! or through others. Today's exceptions are listed below with the issue that removes them;
//! the list may only shrink: a new upward import or cycle fails, and so does a listed one
//! that is gone (remove it from the list). The front ends (`mcp`, `rig`, `cli`) reach the
//! rest of the crate only through the facade: the names `lib.rs` re-exports with `pub use`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules of `src/`, lowest layer first; a module may import only modules of
/// a lower layer (or its own).
const LAYERS: &[&[&str]] = &[
    &[
        "error",
        "digest",
        "bounded_read",
        "env_vars",
        "blocking",
        "fs_roots",
        "json_type",
        "shutdown",
        "mru",
        "inline_task",
        "telemetry",
    ],
    &["store"],
    &["registry"],
    &["lua"],
    &["discovery"],
    &["config"],
    // Tool packs: `pack.toml`, `toolhost.lock` and the digests of a pack's files.
    &["pack"],
    // The tool sources besides Lua files: native tools, other MCP servers' tools.
    // The shipped library embedded in the binary is a source too (its files are written out).
    &["native", "mcp_client", "library"],
    &["toolsets"],
    &["search"],
    &["definitions"],
    &["dispatch"],
    &["host"],
    // The facade: the CLI and the MCP server use `Host` and the public types through it.
    &["lib"],
    &["mcp", "rig"],
    &["cli"],
    &["main"],
];

/// Upward imports that exist today (importer → imported module), each with the change that
/// removes it. None: keep it so.
const KNOWN_UPWARD: &[(&str, &str)] = &[];

/// Import cycles between files that exist today (issue 33), as the sorted files of each.
const KNOWN_CYCLES: &[&[&str]] = &[];

/// The rooms of `lua/` (its folders, and `register`), lowest first: a file in a room imports
/// only files of its own or a lower room. The files right in `lua/` that are not rooms
/// (`convert`, `error_text`, `bom`, …) are below every room; `lua/mod.rs` is the facade for
/// the rest of the crate, above every room, so no file inside `lua/` imports through it.
const LUA_ROOMS: &[&str] = &["call", "register", "sandbox", "api", "vm"];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// Every `.rs` file under `src/`, as paths relative to `src/`.
fn sources(src: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("src readable") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path.strip_prefix(src).expect("inside src").to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// The code of a file without its `#[cfg(test)]` module (tests may reach anywhere) and
/// without comments.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module path of a file: `lua/vm.rs` and `lua/vm/mod.rs` → `["lua", "vm"]`.
fn module_path(file: &Path) -> Vec<String> {
    let mut parts: Vec<String> = file
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The file a module path names, taking the longest prefix that is a file.
fn file_of(path: &[String], files: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|prefix| files.contains(prefix))
}

/// `crate::a::b…` and `super::…` paths in `code`, resolved to module paths.
fn imported_paths(code: &str, own: &[String], is_dir_module: bool) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while i < code.len() {
        let rest = &bytes[i..];
        let starts_word = i == 0 || !is_ident(bytes[i - 1]);
        let (prefix, base) = if starts_word && rest.starts_with(b"crate::") {
            ("crate::", Vec::new())
        } else if starts_word && rest.starts_with(b"super::") {
            // A `mod.rs`'s module is its folder: `super` is the folder's parent.
            let mut base = own.to_vec();
            if !is_dir_module || !base.is_empty() {
                base.pop();
            }
            ("super::", base)
        } else {
            i += 1;
            continue;
        };
        let j = path_from(code, i + prefix.len(), base, prefix == "crate::", &mut out);
        i = j.max(i + 1);
    }
    out
}

/// Reads one path at `code[j..]` below `base` (`a::b::C`, `super::x`, or a group
/// `{a::B, c::{D, E}}`), pushes each module path it names, and returns where it ends.
fn path_from(
    code: &str,
    mut j: usize,
    mut base: Vec<String>,
    crate_root: bool,
    out: &mut Vec<Vec<String>>,
) -> usize {
    let bytes = code.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    loop {
        while j < code.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        if bytes.get(j) == Some(&b'{') {
            // A group: each item is a path below `base`.
            j += 1;
            loop {
                j = path_from(code, j, base.clone(), crate_root && base.is_empty(), out);
                while j < code.len() && bytes[j].is_ascii_whitespace() {
                    j += 1;
                }
                match bytes.get(j) {
                    Some(b',') => j += 1,
                    Some(b'}') => return j + 1,
                    _ => return j,
                }
                while j < code.len() && bytes[j].is_ascii_whitespace() {
                    j += 1;
                }
                if bytes.get(j) == Some(&b'}') {
                    return j + 1;
                }
            }
        }
        let start = j;
        while j < code.len() && is_ident(bytes[j]) {
            j += 1;
        }
        let word = &code[start..j];
        match word {
            "super" => {
                base.pop();
            }
            "self" => {}
            _ if word.chars().next().is_some_and(|c| c.is_lowercase()) => {
                base.push(word.to_string());
            }
            _ => {
                // `crate::Host`: an item of the crate root, the facade `lib.rs`.
                if crate_root && base.is_empty() && !word.is_empty() {
                    base.push("lib".to_string());
                }
                break;
            }
        }
        if bytes[j..].starts_with(b"::") {
            j += 2;
        } else {
            break;
        }
    }
    // `as` renames and the rest of a `use` line do not name modules.
    out.push(base);
    j
}

struct Graph {
    /// File → files it imports.
    files: BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
}

fn graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let paths = sources(&src);
    let mut modules: BTreeSet<Vec<String>> = paths.iter().map(|p| module_path(p)).collect();
    // `lib.rs` is the crate root; its module path is `lib` here.
    modules.insert(vec!["lib".to_string()]);
    let mut files = BTreeMap::new();
    for path in &paths {
        let own = module_path(path);
        let text = std::fs::read_to_string(src.join(path)).expect("readable");
        let is_dir_module = path.file_name().is_some_and(|n| n == "mod.rs");
        let mut imports = BTreeSet::new();
        for imported in imported_paths(&code_of(&text), &own, is_dir_module) {
            if let Some(file) = file_of(&imported, &modules)
                && file != own
            {
                imports.insert(file);
            }
        }
        files.insert(own, imports);
    }
    Graph { files }
}

fn top(module: &[String]) -> &str {
    module.first().map(String::as_str).unwrap_or("lib")
}

#[test]
fn no_module_imports_a_higher_layer() {
    let graph = graph();
    let mut upward: BTreeSet<(String, String)> = BTreeSet::new();
    let mut unknown = BTreeSet::new();
    for (file, imports) in &graph.files {
        for imported in imports {
            let (from, to) = (top(file), top(imported));
            match (layer_of(from), layer_of(to)) {
                (Some(a), Some(b)) if b > a => {
                    upward.insert((from.to_string(), to.to_string()));
                }
                (Some(_), Some(_)) => {}
                _ => {
                    unknown.insert(format!("{from} or {to}"));
                }
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "modules missing from LAYERS: {unknown:?}"
    );
    let known: BTreeSet<(String, String)> = KNOWN_UPWARD
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let new: Vec<_> = upward.difference(&known).collect();
    let gone: Vec<_> = known.difference(&upward).collect();
    assert!(new.is_empty(), "new upward imports: {new:?}");
    assert!(gone.is_empty(), "fixed, remove from KNOWN_UPWARD: {gone:?}");
}

/// Strongly connected components of more than one file (Tarjan).
fn cycles(graph: &Graph) -> BTreeSet<Vec<String>> {
    struct State<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        on_stack: BTreeSet<&'a Vec<String>>,
        next: usize,
        found: BTreeSet<Vec<String>>,
    }
    fn visit<'a>(state: &mut State<'a>, node: &'a Vec<String>) {
        state.index.insert(node, state.next);
        state.low.insert(node, state.next);
        state.next += 1;
        state.stack.push(node);
        state.on_stack.insert(node);
        let graph = state.graph;
        for next in graph.files.get(node).into_iter().flatten() {
            let Some((next, _)) = graph.files.get_key_value(next) else {
                continue;
            };
            if !state.index.contains_key(next) {
                visit(state, next);
                let low = state.low[next].min(state.low[node]);
                state.low.insert(node, low);
            } else if state.on_stack.contains(next) {
                let low = state.index[next].min(state.low[node]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = Vec::new();
            while let Some(member) = state.stack.pop() {
                state.on_stack.remove(member);
                component.push(member.join("/"));
                if member == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                state.found.insert(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: BTreeSet::new(),
    };
    for node in graph.files.keys() {
        if !state.index.contains_key(node) {
            visit(&mut state, node);
        }
    }
    state.found
}

#[test]
fn no_files_import_each_other() {
    let found = cycles(&graph());
    let known: BTreeSet<Vec<String>> = KNOWN_CYCLES
        .iter()
        .map(|c| c.iter().map(|s| s.to_string()).collect())
        .collect();
    let new: Vec<_> = found.difference(&known).collect();
    let gone: Vec<_> = known.difference(&found).collect();
    assert!(new.is_empty(), "new import cycles: {new:#?}");
    assert!(gone.is_empty(), "fixed, remove from KNOWN_CYCLES: {gone:?}");
}

#[test]
fn grouped_and_nested_paths_are_read() {
    let own = vec!["host".to_string(), "builder".to_string()];
    let found = imported_paths(
        "use crate::{lua::{LuaVm, api::fs}, store::Store, Host};\nuse super::{reload, self};",
        &own,
        false,
    );
    let found: Vec<String> = found.iter().map(|p| p.join("/")).collect();
    for expected in ["lua", "lua/api/fs", "store", "lib", "host/reload", "host"] {
        assert!(
            found.iter().any(|p| p == expected),
            "{expected} in {found:?}"
        );
    }
}

/// The front ends: they use `Host` and the public types (DESIGN), not the layers between.
const FRONT_ENDS: &[&str] = &["mcp", "rig", "cli"];

/// The names `lib.rs` re-exports with `pub use` (a renamed item under its new name).
fn facade_names(lib: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let code = code_of(lib);
    let mut rest = code.as_str();
    while let Some(at) = rest.find("pub use ") {
        let statement = &rest[at + "pub use ".len()..];
        let end = statement.find(';').unwrap_or(statement.len());
        // Tokens: identifiers and the punctuation that ends a leaf of the use tree.
        let mut tokens = Vec::new();
        let mut word = String::new();
        for c in statement[..end].chars().chain([';']) {
            if c.is_ascii_alphanumeric() || c == '_' {
                word.push(c);
                continue;
            }
            if !word.is_empty() {
                tokens.push(std::mem::take(&mut word));
            }
            if matches!(c, ',' | '}' | ';' | '{') {
                tokens.push(c.to_string());
            }
        }
        for (i, token) in tokens.iter().enumerate() {
            let next = tokens.get(i + 1).map(String::as_str);
            let is_leaf = matches!(next, Some(",") | Some("}") | Some(";"));
            let is_word = token.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if is_leaf && is_word && token != "self" {
                names.insert(token.clone());
            }
        }
        rest = &statement[end..];
    }
    names
}

/// The first segment of every `crate::` path in `code`: `crate::{a::B, C}` → `a`, `C`.
fn crate_roots(code: &str) -> Vec<String> {
    let bytes = code.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let ident_at = |mut j: usize| {
        while j < code.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        let start = j;
        while j < code.len() && is_ident(bytes[j]) {
            j += 1;
        }
        (code[start..j].to_string(), j)
    };
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(found) = code[i..].find("crate::") {
        let at = i + found;
        i = at + "crate::".len();
        if at > 0 && is_ident(bytes[at - 1]) {
            continue;
        }
        let mut j = i;
        while j < code.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        if bytes.get(j) != Some(&b'{') {
            out.push(ident_at(j).0);
            continue;
        }
        // A group: the first identifier of each item at its top level.
        let mut depth = 0;
        let mut item_start = true;
        j += 1;
        while j < code.len() {
            match bytes[j] {
                b'{' => depth += 1,
                b'}' if depth == 0 => break,
                b'}' => depth -= 1,
                b',' if depth == 0 => item_start = true,
                b if is_ident(b) && item_start => {
                    let (word, end) = ident_at(j);
                    out.push(word);
                    item_start = false;
                    j = end;
                    continue;
                }
                _ => {}
            }
            j += 1;
        }
    }
    out
}

#[test]
fn front_ends_use_only_the_facade() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs readable");
    let facade = facade_names(&lib);
    let mut outside = BTreeSet::new();
    for path in sources(&src) {
        let own = module_path(&path);
        let front_end = top(&own).to_string();
        if !FRONT_ENDS.contains(&front_end.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(src.join(&path)).expect("readable");
        for root in crate_roots(&code_of(&text)) {
            // Allowed: a facade name, the front end's own module, a front end it sits
            // above (`cli` starts the MCP server) and the base layer (plain helpers that
            // hold none of the host's state: errors, roots, signals, `json_type`).
            let allowed = facade.contains(&root)
                || root == front_end
                || (FRONT_ENDS.contains(&root.as_str()) && layer_of(&root) < layer_of(&front_end))
                || layer_of(&root) == Some(0);
            if !allowed {
                outside.insert(format!("{} → crate::{root}", path.display()));
            }
        }
    }
    assert!(
        outside.is_empty(),
        "front ends reaching past the facade (give `Host` or a public type a method, or \
         re-export a deliberately public type): {outside:#?}"
    );
}

#[test]
fn facade_names_and_crate_roots_are_read() {
    let names = facade_names(
        "mod a;\npub use a::{B, c::{D, E as F}};\n#[cfg(x)]\npub use g::H;\nuse i::J;",
    );
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    assert_eq!(names, ["B", "D", "F", "H"]);
    let roots = crate_roots("use crate::{a::B, C, d::{e, F}};\nlet x = crate::g::h();");
    assert_eq!(roots, ["a", "C", "d", "g"]);
}

/// Where a file of `lua/` sits in [`LUA_ROOMS`]: 0 for the shared files at its root, the
/// room's place + 1 for a room, above every room for the facade; `None` outside `lua/`.
fn lua_room_of(file: &[String]) -> Option<usize> {
    match file {
        [lua] if lua == "lua" => Some(LUA_ROOMS.len() + 1),
        [lua, first, ..] if lua == "lua" => Some(
            LUA_ROOMS
                .iter()
                .position(|room| room == first)
                .map_or(0, |at| at + 1),
        ),
        _ => None,
    }
}

#[test]
fn lua_rooms_keep_their_order() {
    let graph = graph();
    let mut upward = Vec::new();
    for (file, imports) in &graph.files {
        let Some(from) = lua_room_of(file) else {
            continue;
        };
        for imported in imports {
            if let Some(to) = lua_room_of(imported)
                && to > from
            {
                upward.push(format!("{} → {}", file.join("/"), imported.join("/")));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that run up the rooms of lua/ ({LUA_ROOMS:?}, shared files below, the \
         facade lua/mod.rs above): {upward:#?}"
    );
}
