//! The documentation stands on its own and stays true (docs/README.md is the index):
//! every relative link and `#anchor` in README.md, CONTRIBUTING.md and docs/*.md resolves
//! (anchors by GitHub's slug rule), every docs page is reachable from the index, every
//! `tests/`, `scripts/`, `benches/` or `examples/` path they name exists, nothing points at
//! the project's original specification (a cloner does not have it), and the reference parts
//! are checked against the real binary: the host-API sections of docs/lua-api.md equal what
//! `toolhost stubs` generates now, every command, argument and flag of `toolhost --help`
//! is in docs/cli.md, and every key the configuration model accepts is in
//! docs/configuration.md (and nothing else is).

use assert_cmd::Command;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The user-facing Markdown files, relative to the root: README.md, CONTRIBUTING.md and
/// every `docs/*.md`.
fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![PathBuf::from("README.md"), PathBuf::from("CONTRIBUTING.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|entry| entry.expect("docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .map(|path| {
            path.strip_prefix(root())
                .expect("under the root")
                .to_path_buf()
        })
        .collect();
    docs.sort();
    assert!(docs.len() >= 10, "docs/ holds only {docs:?}");
    files.extend(docs);
    files
}

fn read(relative: &Path) -> String {
    std::fs::read_to_string(root().join(relative))
        .unwrap_or_else(|e| panic!("reading {}: {e}", relative.display()))
}

/// The text outside fenced code blocks, line by line (with 1-based line numbers).
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut out = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match fence {
            Some(marker) => {
                if trimmed.starts_with(marker) {
                    fence = None;
                }
            }
            None if trimmed.starts_with("```") => fence = Some("```"),
            None if trimmed.starts_with("~~~") => fence = Some("~~~"),
            None => out.push((index + 1, line)),
        }
    }
    out
}

/// `line` without its inline code spans (a run of n backticks up to the next run of n).
fn without_code_spans(line: &str) -> String {
    let bytes = line.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'`' {
            let run = bytes[i..].iter().take_while(|&&b| b == b'`').count();
            let mut j = i + run;
            let mut closed = None;
            while j < bytes.len() {
                if bytes[j] == b'`' {
                    let other = bytes[j..].iter().take_while(|&&b| b == b'`').count();
                    if other == run {
                        closed = Some(j + other);
                        break;
                    }
                    j += other;
                } else {
                    j += 1;
                }
            }
            match closed {
                Some(end) => {
                    out.push(' ');
                    i = end;
                }
                None => {
                    out.push_str(&line[i..i + run]);
                    i += run;
                }
            }
        } else {
            let c = line[i..].chars().next().expect("a char");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The targets of the inline links `[text](target)` on a line (code spans skipped).
fn link_targets(line: &str) -> Vec<String> {
    let text = without_code_spans(line);
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let end = after.find(')').unwrap_or(after.len());
        let target = after[..end].split_whitespace().next().unwrap_or("");
        out.push(target.to_string());
        rest = &after[end..];
    }
    out
}

/// GitHub's anchor for a heading: the rendered text, lowercased, keeping letters, digits,
/// `_`, `-` and spaces (which become `-`).
fn slug(heading: &str) -> String {
    // Rendered text: code spans lose their backticks, links keep their text.
    let mut text = heading.replace('`', "");
    while let (Some(open), Some(mid)) = (text.find('['), text.find("](")) {
        if mid < open {
            break;
        }
        let Some(close) = text[mid..].find(')').map(|c| mid + c) else {
            break;
        };
        text = format!(
            "{}{}{}",
            &text[..open],
            &text[open + 1..mid],
            &text[close + 1..]
        );
    }
    text.trim()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .flat_map(char::to_lowercase)
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor of a Markdown text (duplicates get `-1`, `-2`, … as on GitHub).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let count = seen.entry(base.clone()).or_insert(0);
        out.insert(if *count == 0 {
            base.clone()
        } else {
            format!("{base}-{count}")
        });
        *count += 1;
    }
    out
}

/// Problems with the relative links of `file` (`text` is its contents); the linked
/// Markdown files are returned too.
fn check_links(file: &Path, text: &str, problems: &mut Vec<String>) -> Vec<PathBuf> {
    let mut linked = Vec::new();
    let dir = file.parent().unwrap_or(Path::new(""));
    for (number, line) in prose_lines(text) {
        for target in link_targets(line) {
            if target.is_empty()
                || target.starts_with("http://")
                || target.starts_with("https://")
                || target.starts_with("mailto:")
            {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let resolved = if path.is_empty() {
                file.to_path_buf()
            } else {
                normalise(&dir.join(path))
            };
            let at = format!("{}:{number}: link `{target}`", file.display());
            if resolved.starts_with("..") || !root().join(&resolved).exists() {
                problems.push(format!("{at}: {} does not exist", resolved.display()));
                continue;
            }
            if resolved.extension().is_some_and(|e| e == "md") {
                linked.push(resolved.clone());
            }
            if let Some(anchor) = anchor {
                let names = anchors(&read(&resolved));
                if !names.contains(anchor) {
                    problems.push(format!(
                        "{at}: no heading of {} has the anchor #{anchor} (it has: {})",
                        resolved.display(),
                        names.into_iter().collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        }
    }
    linked
}

/// `path` with `.` and `..` resolved as written (it is relative to the root).
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut problems = Vec::new();
    for file in markdown_files() {
        check_links(&file, &read(&file), &mut problems);
    }
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_docs_page_is_reachable_from_the_index() {
    let index = PathBuf::from("docs/README.md");
    let mut reached = BTreeSet::from([index.clone()]);
    let mut queue = VecDeque::from([index]);
    let mut ignored = Vec::new();
    while let Some(page) = queue.pop_front() {
        for next in check_links(&page, &read(&page), &mut ignored) {
            if next.starts_with("docs") && reached.insert(next.clone()) {
                queue.push_back(next);
            }
        }
    }
    let unreached: Vec<PathBuf> = markdown_files()
        .into_iter()
        .filter(|file| file.starts_with("docs") && !reached.contains(file))
        .collect();
    assert!(
        unreached.is_empty(),
        "not reachable from docs/README.md: {unreached:?}"
    );
}

#[test]
fn every_repository_path_the_docs_name_exists() {
    let pattern = regex::Regex::new(
        r"(?:^|[^A-Za-z0-9_./-])((?:tests|scripts|benches|examples)/[A-Za-z0-9_./-]*)",
    )
    .expect("pattern");
    let mut missing = Vec::new();
    for file in markdown_files() {
        for (number, line) in read(&file).lines().enumerate() {
            for found in pattern.captures_iter(line) {
                let path = found[1].trim_end_matches(['.', ',', ':', ';']);
                // `tests/NAME.rs`: a placeholder, not a path.
                let placeholder = path.split(['/', '.']).any(|part| {
                    part.len() > 1 && part.chars().all(|c| c.is_ascii_uppercase() || c == '_')
                });
                if !placeholder && !root().join(path).exists() {
                    missing.push(format!("{}:{}: {path}", file.display(), number + 1));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths that do not exist:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_docs_do_not_point_outside_the_repository() {
    let mut found = Vec::new();
    for file in markdown_files() {
        for (number, line) in read(&file).lines().enumerate() {
            // Spelt in pieces so this file does not match a grep for them itself.
            for word in [
                concat!("..", "/shared"),
                "SPEC",
                concat!("DESIGN", ".md"),
                "§",
            ] {
                if line.contains(word) {
                    found.push(format!("{}:{}: {word}", file.display(), number + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "references to documents a cloner does not have:\n{}",
        found.join("\n")
    );
}

fn toolhost(dir: &Path) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"));
    cmd.current_dir(dir)
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .env_remove("TOOLHOST_LOG")
        .env("XDG_CACHE_HOME", dir.join("xdg"));
    cmd
}

/// The LuaLS stubs as `toolhost stubs` writes them now.
fn stubs() -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    toolhost(dir.path())
        .args(["--tools-dir", "tools", "stubs"])
        .assert()
        .success();
    std::fs::read_to_string(dir.path().join("tools/types/toolhost.lua")).expect("stubs written")
}

/// The `---@field NAME TYPE # DOC` lines of a stubs class, as (name, type, doc).
fn class_fields(stubs: &str, class: &str) -> Vec<(String, String, String)> {
    let header = format!("---@class {class}");
    stubs
        .lines()
        .skip_while(|line| *line != header)
        .skip(1)
        .map_while(|line| line.strip_prefix("---@field "))
        .map(|field| {
            let (name, rest) = field.split_once(' ').unwrap_or((field, ""));
            let (ty, doc) = rest.split_once(" # ").unwrap_or((rest, ""));
            (name.to_string(), ty.to_string(), doc.to_string())
        })
        .collect()
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// A Markdown table of a stubs class's fields (`ctx`, `t`).
fn fields_table(stubs: &str, class: &str, prefix: &str) -> String {
    let fields = class_fields(stubs, class);
    assert!(!fields.is_empty(), "the stubs have no class {class}");
    let mut out = String::from("| field | type | meaning |\n|---|---|---|\n");
    for (name, ty, doc) in fields {
        out.push_str(&format!(
            "| `{prefix}{name}` | `{}` | {} |\n",
            cell(&ty),
            cell(&doc)
        ));
    }
    out
}

/// The host modules, rendered from the stubs: a section per module with its functions'
/// signatures, parameter types, return types and documentation.
fn host_api(stubs: &str) -> String {
    let mut out = String::new();
    let mut doc = Vec::<String>::new();
    let mut params = Vec::<(String, String)>::new();
    let mut returns = None::<String>;
    let mut constant = None::<String>;
    let mut modules = 0;
    // The modules follow `function test(...)`.
    let start = stubs
        .find("function test(")
        .expect("the stubs declare test()");
    for line in stubs[start..].lines().skip(1) {
        if let Some(text) = line.strip_prefix("---@param ") {
            let (name, ty) = text.split_once(' ').unwrap_or((text, ""));
            params.push((name.to_string(), ty.to_string()));
        } else if let Some(ty) = line.strip_prefix("---@return ") {
            returns = Some(ty.to_string());
        } else if let Some(ty) = line.strip_prefix("---@type ") {
            constant = Some(ty.to_string());
        } else if let Some(text) = line.strip_prefix("---") {
            doc.push(text.to_string());
        } else if let Some(module) = line.strip_suffix(" = {}") {
            modules += 1;
            out.push_str(&format!(
                "\n### `{module}`\n\n{}\n\n| function | returns | what it does |\n|---|---|---|\n",
                doc.join(" ")
            ));
            doc.clear();
        } else if let Some(name) = line.strip_suffix(" = nil") {
            let ty = constant.take().unwrap_or_default();
            out.push_str(&format!(
                "| `{name}` (a value) | `{}` | {} |\n",
                cell(&ty),
                cell(&doc.join(" "))
            ));
            doc.clear();
        } else if let Some(signature) = line.strip_prefix("function ") {
            let name = signature.split('(').next().unwrap_or(signature);
            let args: Vec<String> = params
                .drain(..)
                .map(|(name, ty)| format!("{name}: {ty}"))
                .collect();
            let returned = returns
                .take()
                .map_or("—".to_string(), |r| format!("`{}`", cell(&r)));
            out.push_str(&format!(
                "| `{name}({})` | {returned} | {} |\n",
                cell(&args.join(", ")),
                cell(&doc.join(" "))
            ));
            doc.clear();
        }
    }
    assert!(modules >= 7, "only {modules} host modules in the stubs");
    out.trim_start().to_string()
}

/// `page` with each generated region replaced by `sections[name]`.
fn regenerate(page: &str, sections: &BTreeMap<&str, String>) -> String {
    let mut out = page.to_string();
    for (name, body) in sections {
        let begin = format!("<!-- BEGIN GENERATED {name}:");
        let end = format!("<!-- END GENERATED {name} -->");
        let start = out
            .find(&begin)
            .unwrap_or_else(|| panic!("docs/lua-api.md has no region {name}"));
        let body_start = start + out[start..].find("-->\n").expect("marker ends") + 4;
        let body_end = out[body_start..]
            .find(&end)
            .map(|at| body_start + at)
            .unwrap_or_else(|| panic!("region {name} is not closed"));
        out.replace_range(body_start..body_end, body);
    }
    out
}

#[test]
fn the_lua_api_page_equals_what_the_stubs_generator_prints_now() {
    let stubs = stubs();
    let sections = BTreeMap::from([
        ("ctx", fields_table(&stubs, "toolhost.Ctx", "ctx.")),
        ("test", fields_table(&stubs, "toolhost.Test", "t.")),
        ("host-api", host_api(&stubs)),
    ]);
    let page = read(Path::new("docs/lua-api.md"));
    let fresh = regenerate(&page, &sections);
    if fresh != page {
        let out = root().join("target/docs-generated");
        std::fs::create_dir_all(&out).expect("target/docs-generated");
        std::fs::write(out.join("lua-api.md"), &fresh).expect("regenerated page written");
        panic!(
            "docs/lua-api.md's generated sections are stale (the host-API table or the stubs \
             changed): the regenerated page is in target/docs-generated/lua-api.md — \
             `cp target/docs-generated/lua-api.md docs/` after reading the diff"
        );
    }
    // The registration fields (their exact table is checked against the field table by the
    // library's own test): each has its row.
    for (name, _, _) in class_fields(&stubs, "toolhost.Tool") {
        let name = name.trim_end_matches('?');
        assert!(
            page.contains(&format!("| `{name}`")),
            "docs/lua-api.md has no row for the registration field `{name}`"
        );
    }
}

/// The long and short flags (`--json`, `-v`) and the argument names (`NAME`, `FILES`) of
/// one `--help` text.
fn help_items(help: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut flags = BTreeSet::new();
    let mut args = BTreeSet::new();
    let mut section = "";
    for line in help.lines() {
        if !line.starts_with(' ') {
            section = line;
            continue;
        }
        let first = line.trim_start();
        // Wrapped description lines are indented further than items.
        if line.len() - first.len() > 6 {
            continue;
        }
        match section {
            "Options:" => {
                for token in first.split([' ', ',']).take(3) {
                    let token = token.trim_end_matches("...");
                    if token.starts_with('-') && token.len() > 1 {
                        flags.insert(token.to_string());
                    }
                }
            }
            "Arguments:" => {
                let name = first.split_whitespace().next().unwrap_or("");
                args.insert(name.trim_matches(['<', '>', '[', ']', '.']).to_string());
            }
            _ => {}
        }
    }
    (flags, args)
}

/// The commands listed by `toolhost --help` (without `help`).
fn commands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// The `## ` sections of a page, by heading.
fn sections(page: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (_, line) in prose_lines(page) {
        if let Some(heading) = line.strip_prefix("## ") {
            out.push((heading.to_string(), String::new()));
        } else if let Some((_, body)) = out.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out
}

fn help_of(args: &[&str]) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = toolhost(dir.path())
        .args(args)
        .output()
        .expect("toolhost runs");
    assert!(output.status.success(), "toolhost {args:?} failed");
    String::from_utf8(output.stdout).expect("help is UTF-8")
}

#[test]
fn the_cli_page_names_every_command_argument_and_flag() {
    let page = read(Path::new("docs/cli.md"));
    let sections = sections(&page);
    let section = |heading: &str| {
        sections
            .iter()
            .find(|(h, _)| h == heading)
            .map(|(_, body)| body.clone())
            .unwrap_or_else(|| panic!("docs/cli.md has no section `## {heading}`"))
    };
    let top = help_of(&["--help"]);
    let (global, _) = help_items(&top);
    assert!(global.contains("--tools-dir"), "{top}");
    let globals = section("Global options");
    let mut missing = Vec::new();
    for flag in &global {
        if !globals.contains(&format!("`{flag}")) {
            missing.push(format!("global option {flag}"));
        }
    }
    let commands = commands(&top);
    assert!(commands.len() >= 10, "{commands:?}");
    for command in &commands {
        let body = section(&format!("`toolhost {command}`"));
        let (flags, args) = help_items(&help_of(&[command, "--help"]));
        for flag in flags.difference(&global) {
            if !body.contains(&format!("`{flag}")) {
                missing.push(format!("{command} {flag}"));
            }
        }
        for arg in &args {
            if !body.contains(&format!("`{arg}`")) {
                missing.push(format!("{command} argument {arg}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "not documented in docs/cli.md: {missing:?}"
    );
}

/// The keys the configuration model accepts in the section that `header` opens (empty: the
/// top level), as the binary's own unknown-key error lists them.
fn accepted_keys(header: &str) -> Vec<String> {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("probe.toml"),
        format!("{header}\nzz_not_a_key = 1\n"),
    )
    .expect("probe config written");
    std::fs::create_dir_all(dir.path().join("tools")).expect("tools dir");
    let output = toolhost(dir.path())
        .args(["--config", "probe.toml", "--tools-dir", "tools", "list"])
        .output()
        .expect("toolhost runs");
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    let expected = stderr
        .split_once("expected")
        .unwrap_or_else(|| panic!("no key list for {header:?}: {stderr}"))
        .1;
    let keys: Vec<String> = expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    assert!(!keys.is_empty(), "no keys for {header:?}: {stderr}");
    keys
}

#[test]
fn the_configuration_page_documents_every_key_the_config_model_accepts() {
    // Each table section: its heading on the page and a TOML header that opens it.
    let tables = [
        ("toolsets", "`[toolsets.NAME]`", "[toolsets.x]"),
        ("plugins", "`[plugins.ID]`", "[plugins.x]"),
        ("sandbox", "`[sandbox]`", "[sandbox]"),
        ("runtime", "`[runtime]`", "[runtime]"),
        ("approval", "`[approval]`", "[approval]"),
        ("tool_search", "`[tool_search]`", "[tool_search]"),
        ("serve", "`[serve]`", "[serve]"),
        ("store", "`[store]`", "[store]"),
        ("mcp_servers", "`[mcp_servers.NAME]`", "[mcp_servers.x]"),
        ("telemetry", "`[telemetry]`", "[telemetry]"),
        ("audit", "`[audit]`", "[audit]"),
        ("limits", "`[limits]`", "[limits]"),
        ("library", "`[library]`", "[library]"),
    ];
    // Tables inside a section (their path in the section, a TOML header that opens them),
    // documented as `table.key` rows of it, the path's names and ids left out.
    let nested = [
        ("mcp_servers", "tools", "[mcp_servers.x.tools]"),
        ("serve", "tokens", "[[serve.tokens]]"),
        ("serve", "oauth", "[serve.oauth]"),
        ("limits", "default", "[limits.default]"),
        ("limits", "tools", "[limits.tools.x]"),
        ("limits", "callers", "[limits.callers.x]"),
        ("limits", "callers.tools", "[limits.callers.x.tools.y]"),
    ];

    let mut accepted: BTreeSet<(String, String)> = BTreeSet::new();
    for key in accepted_keys("") {
        if !tables.iter().any(|(name, _, _)| *name == key) {
            accepted.insert(("Top level".into(), key));
        }
    }
    let top = accepted_keys("");
    for (name, heading, header) in tables {
        assert!(
            top.contains(&name.to_string()),
            "the config model has no section {name}"
        );
        for key in accepted_keys(header) {
            if !nested.iter().any(|(n, t, _)| *n == name && *t == key) {
                accepted.insert((heading.into(), key));
            }
        }
    }
    for (name, table, header) in nested {
        let heading = tables.iter().find(|t| t.0 == name).expect("known table").1;
        for key in accepted_keys(header) {
            let path = format!("{table}.{key}");
            if !nested.iter().any(|(n, t, _)| *n == name && *t == path) {
                accepted.insert((heading.into(), path));
            }
        }
    }

    let page = read(Path::new("docs/configuration.md"));
    let mut documented: BTreeSet<(String, String)> = BTreeSet::new();
    for (heading, body) in sections(&page) {
        for row in body.lines().filter(|l| l.starts_with("| `")) {
            let cells: Vec<&str> = row.split(" | ").collect();
            let key = cells[0].trim_start_matches("| ").trim_matches('`');
            assert!(
                cells.len() >= 3 && !cells[1].trim().is_empty(),
                "docs/configuration.md: `{key}` under {heading} has no default"
            );
            documented.insert((heading.clone(), key.to_string()));
        }
    }
    let undocumented: Vec<_> = accepted.difference(&documented).collect();
    let unknown: Vec<_> = documented.difference(&accepted).collect();
    assert!(
        undocumented.is_empty() && unknown.is_empty(),
        "docs/configuration.md is out of step with the config model:\n\
         accepted but not documented: {undocumented:?}\n\
         documented but not accepted: {unknown:?}"
    );
}

#[test]
fn the_link_checker_follows_githubs_slug_rule_and_finds_broken_links() {
    assert_eq!(slug(" `[mcp_servers.NAME]`"), "mcp_serversname");
    assert_eq!(
        slug(" The registration cache: files run at first use"),
        "the-registration-cache-files-run-at-first-use"
    );
    assert_eq!(slug(" Hooks: `registry.hook`"), "hooks-registryhook");
    let text = "# A\n## Same\n## Same\n```\n# not a heading\n```\n";
    let names = anchors(text);
    assert!(
        names.contains("same") && names.contains("same-1"),
        "{names:?}"
    );
    assert!(!names.contains("not-a-heading"), "{names:?}");
    assert_eq!(
        link_targets("see [x](a.md#b) and `[y](not-a-link)` and [z](c.md)"),
        ["a.md#b", "c.md"]
    );
    let mut problems = Vec::new();
    check_links(
        Path::new("docs/README.md"),
        "[gone](no-such-page.md) [bad](cli.md#no-such-anchor) [ok](cli.md#exit-codes)\n",
        &mut problems,
    );
    assert_eq!(problems.len(), 2, "{problems:?}");
}
