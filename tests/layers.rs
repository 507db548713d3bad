//! The layer order (CONTRIBUTING.md), checked from the code's own `crate::` paths: a module
//! imports only modules on its layer's left, and no two files import each other, directly
//! or through others. Today's exceptions are listed below with the issue that removes them;
//! the list may only shrink: a new upward import or cycle fails, and so does a listed one
//! that is gone (remove it from the list).

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
        "mru",
    ],
    &["store"],
    &["registry"],
    &["lua"],
    &["discovery"],
    &["config"],
    &["native"],
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

/// Upward imports that exist today (importer → imported module), each to be removed by
/// issue 33 ("The house"): the MCP client becomes a tool source below `host/`.
const KNOWN_UPWARD: &[(&str, &str)] = &[("host", "mcp")];

/// Import cycles between files that exist today (issue 33), as the sorted files of each.
const KNOWN_CYCLES: &[&[&str]] = &[];

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
