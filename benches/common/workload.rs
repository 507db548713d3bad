//! The benchmark workload, generated in the repository: a synthetic tool set with the shape
//! of the one the reference Python registry was measured on (28 toolsets, half of them with
//! a shared availability probe; echo-like handlers; 4–6 parameters per tool drawn from a pool
//! of 38; six helper files that must not register), deterministic for a seed. Benches write
//! it as Lua files (`benches/common/mod.rs`); the coercion property test reads its schemas
//! (`src/dispatch/coerce_props.rs` includes this file by path, so it needs only `std` and
//! `serde_json`).
//!
//! The manifest has the reference's layout (`tools`, `toolsets`, `helpers`, `bench_calls`,
//! plus `generator`, `n`, `seed`), so `scripts/mcp_stdio_bench.py` can build its FastMCP
//! server from it. The vocabulary, the toolset weights and the parameter pool's frequencies
//! are the reference's; the draw is our own (a SplitMix64 stream), so the names differ.
#![allow(dead_code)]

use serde_json::{Map, Value, json};
use std::fmt::Write as _;
use std::path::Path;

/// The seed the benches use (the reference workload's own).
pub const SEED: u64 = 1234;

/// Toolsets (without the `syn_` prefix) and their weights: the tool counts of the
/// reference's 1,000-tool workload (echo aside), so toolset sizes keep its skew. Every
/// second one has a shared availability probe.
const TOOLSETS: [(&str, u32); 28] = [
    ("core", 143),
    ("web", 75),
    ("files", 79),
    ("shell", 65),
    ("git", 47),
    ("github", 51),
    ("jira", 48),
    ("slack", 38),
    ("email", 32),
    ("calendar", 39),
    ("docs", 28),
    ("sheets", 34),
    ("db", 23),
    ("search", 25),
    ("vision", 21),
    ("audio", 22),
    ("maps", 22),
    ("weather", 27),
    ("finance", 18),
    ("crm", 15),
    ("k8s", 17),
    ("cloud", 12),
    ("monitor", 20),
    ("notes", 25),
    ("tasks", 23),
    ("media", 18),
    ("translate", 19),
    ("home", 13),
];

const VERBS: [&str; 24] = [
    "archive",
    "cancel",
    "copy",
    "create",
    "delete",
    "export",
    "fetch",
    "get",
    "import",
    "inspect",
    "list",
    "move",
    "render",
    "resolve",
    "restore",
    "scan",
    "schedule",
    "search",
    "summarize",
    "sync",
    "tag",
    "update",
    "validate",
    "watch",
];

const NOUNS: [&str; 30] = [
    "alert", "branch", "bucket", "comment", "config", "document", "entry", "event", "file",
    "folder", "group", "image", "invoice", "issue", "item", "job", "label", "message", "metric",
    "page", "queue", "record", "report", "rule", "session", "snapshot", "thread", "ticket",
    "token", "user",
];

const EMOJI: [&str; 12] = [
    "\u{2699}\u{fe0f}",
    "\u{2709}\u{fe0f}",
    "\u{1f310}",
    "\u{1f4c1}",
    "\u{1f4c5}",
    "\u{1f4ca}",
    "\u{1f4dd}",
    "\u{1f50d}",
    "\u{1f527}",
    "\u{1f5a5}\u{fe0f}",
    "\u{1f5c2}\u{fe0f}",
    "\u{1f9ea}",
];

/// Second sentences of a description; `{n}` is the plural noun, `{t}` the toolset.
const SUFFIXES: [&str; 5] = [
    "Requires the {t} integration to be configured; otherwise the tool is hidden.",
    "Returns a JSON object describing the outcome; errors are reported in an 'error' field.",
    "The operation is idempotent and safe to retry.",
    "Use this when the user asks about {n} in {t}; prefer narrower filters for large accounts.",
    "Results are paginated; call again with the next page to continue.",
];

/// How a pool parameter varies from tool to tool.
#[derive(Clone, Copy)]
enum Vary {
    /// Always the same definition.
    Fixed,
    /// An integer: maybe a default (1–10), maybe bounds (`minimum` given, `maximum` drawn).
    Integer(u32),
    /// A boolean: maybe `default: false`.
    Boolean,
    /// An enum: maybe its first value as the default.
    Enum,
    /// An array: maybe a `maxItems`.
    Array,
}

/// One pool parameter: name, weight (how many of the reference's 999 generated tools have
/// it), how it varies (which is also its kind) and its base definition.
type Pooled = (&'static str, u32, Vary, Value);

/// The parameter pool.
fn pool() -> Vec<Pooled> {
    let string = |d: &str| json!({"type": "string", "description": d});
    let integer = |d: &str| json!({"type": "integer", "description": d});
    let boolean = |d: &str| json!({"type": "boolean", "description": d});
    let number = |d: &str| json!({"type": "number", "description": d, "minimum": 0, "maximum": 1});
    let strings = |d: &str| json!({"type": "array", "items": {"type": "string"}, "description": d});
    let choice =
        |d: &str, values: &[&str]| json!({"type": "string", "enum": values, "description": d});
    let nullable = |d: &str| json!({"type": ["string", "null"], "description": d});
    use Vary::*;
    vec![
        (
            "case_sensitive",
            168,
            Boolean,
            boolean("Match text case-sensitively."),
        ),
        (
            "cursor",
            199,
            Fixed,
            nullable("Opaque pagination cursor from a previous call, or null."),
        ),
        (
            "depth",
            140,
            Integer(1),
            integer("How many levels deep to traverse."),
        ),
        (
            "dry_run",
            155,
            Boolean,
            boolean("Validate and report what would happen without changing anything."),
        ),
        (
            "fields",
            144,
            Array,
            strings("Fields to include in the response."),
        ),
        (
            "force",
            155,
            Boolean,
            boolean("Skip confirmation safeguards."),
        ),
        (
            "format",
            164,
            Enum,
            choice(
                "Output format of the result.",
                &["json", "markdown", "text", "csv"],
            ),
        ),
        (
            "ids",
            168,
            Array,
            json!({"type": "array", "items": {"type": "integer"},
            "description": "Numeric identifiers of the target objects."}),
        ),
        (
            "include_hidden",
            162,
            Boolean,
            boolean("Also return hidden or archived entries."),
        ),
        ("labels", 166, Array, strings("Labels to attach.")),
        (
            "level",
            164,
            Enum,
            choice(
                "Minimum severity to include.",
                &["debug", "info", "warning", "error"],
            ),
        ),
        (
            "limit",
            153,
            Integer(1),
            integer("Maximum number of results to return."),
        ),
        (
            "max_results",
            141,
            Integer(1),
            integer("Upper bound on returned entries."),
        ),
        (
            "min_score",
            74,
            Fixed,
            number("Discard results scoring below this value."),
        ),
        (
            "mode",
            159,
            Enum,
            choice(
                "Trade-off between speed and completeness.",
                &["fast", "balanced", "thorough"],
            ),
        ),
        ("name", 59, Fixed, string("Human-readable name.")),
        (
            "offset",
            145,
            Integer(0),
            integer("Number of leading results to skip."),
        ),
        (
            "options",
            107,
            Fixed,
            json!({"type": "object", "description": "Additional backend-specific options.",
            "properties": {"key": {"type": "string"}, "value": {"type": "string"}}, "required": ["key"]}),
        ),
        (
            "page",
            133,
            Integer(1),
            integer("1-based page number for paginated results."),
        ),
        (
            "path",
            69,
            Fixed,
            string("Absolute or workspace-relative path."),
        ),
        (
            "paths",
            180,
            Array,
            strings("Paths the operation applies to."),
        ),
        (
            "priority",
            184,
            Enum,
            choice(
                "Priority of the request.",
                &["low", "normal", "high", "urgent"],
            ),
        ),
        (
            "query",
            65,
            Fixed,
            string("Free-text query describing what to look for."),
        ),
        (
            "recursive",
            179,
            Boolean,
            boolean("Descend into nested containers."),
        ),
        (
            "region",
            96,
            Fixed,
            json!({"type": "object", "description": "Rectangular region of interest.",
            "properties": {"width": {"type": "integer"}, "height": {"type": "integer"}}, "required": ["width"]}),
        ),
        (
            "retries",
            144,
            Integer(0),
            integer("How many times to retry transient failures."),
        ),
        (
            "since",
            17,
            Fixed,
            nullable("ISO-8601 timestamp lower bound, or null."),
        ),
        (
            "sort_order",
            142,
            Enum,
            choice("Sort direction.", &["asc", "desc"]),
        ),
        (
            "strategy",
            186,
            Enum,
            choice(
                "How to combine with existing data.",
                &["merge", "replace", "append"],
            ),
        ),
        ("tags", 166, Array, strings("Tags to filter or apply.")),
        (
            "target",
            51,
            Fixed,
            string("Identifier of the target object."),
        ),
        (
            "temperature",
            61,
            Fixed,
            number("Sampling temperature for generated text."),
        ),
        ("text", 65, Fixed, string("Text content to process.")),
        (
            "threshold",
            67,
            Fixed,
            number("Score threshold between 0 and 1."),
        ),
        (
            "timeout_seconds",
            143,
            Integer(1),
            integer("Abort the operation after this many seconds."),
        ),
        (
            "url",
            59,
            Fixed,
            string("Fully qualified URL (https://...)."),
        ),
        ("urls", 175, Array, strings("URLs to process.")),
        (
            "verbose",
            180,
            Boolean,
            boolean("Include extra diagnostic detail in the result."),
        ),
    ]
}

/// SplitMix64: a tiny, fixed generator, so a seed means the same workload on every
/// platform and with every dependency version.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with probability `percent` / 100.
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    /// An index drawn with the given weights (not all zero).
    fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
        let mut pick = self.next() % total;
        for (i, &w) in weights.iter().enumerate() {
            if pick < u64::from(w) {
                return i;
            }
            pick -= u64::from(w);
        }
        weights.len() - 1
    }
}

/// The benchmark round-trip tool, first in every workload.
fn echo() -> Value {
    json!({
        "name": "echo",
        "toolset": "syn_core",
        "module": "tools.syn_0000_echo",
        "check_fn": null,
        "emoji": "\u{1f527}",
        "schema": {
            "name": "echo",
            "description": "Echo the provided arguments back as JSON. Used as the benchmark round-trip tool.",
            "parameters": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "description": "Text to echo back."},
                    "count": {"type": "integer", "description": "Repeat count.", "minimum": 1, "maximum": 100},
                    "loud": {"type": "boolean", "description": "Upper-case the echo."},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "Optional tags."},
                    "mode": {"type": "string", "enum": ["plain", "upper", "lower"], "description": "Echo mode."}
                },
                "required": ["text"]
            }
        }
    })
}

/// The name of toolset `index`'s shared probe, if it has one.
fn check_fn(index: usize) -> Option<String> {
    (index % 2 == 1).then(|| format!("check_syn_{}_requirements", TOOLSETS[index].0))
}

/// One parameter's definition, varied as its pool entry says.
fn parameter(rng: &mut Rng, vary: Vary, base: &Value) -> Value {
    let mut def = base.clone();
    let Value::Object(map) = &mut def else {
        return def;
    };
    match vary {
        Vary::Fixed => {}
        Vary::Integer(minimum) => {
            // Reference frequencies: bare 22%, default 17%, bounds 37%, both 24%.
            let roll = rng.below(100);
            if (22..39).contains(&roll) || roll >= 76 {
                map.insert("default".into(), json!(1 + rng.below(10)));
            }
            if roll >= 39 {
                let maximum = [10, 50, 100, 500, 1000][rng.below(5)];
                map.insert("minimum".into(), json!(minimum));
                map.insert("maximum".into(), json!(maximum));
            }
        }
        Vary::Boolean => {
            if rng.chance(45) {
                map.insert("default".into(), json!(false));
            }
        }
        Vary::Enum => {
            if rng.chance(50) {
                let first = map["enum"][0].clone();
                map.insert("default".into(), first);
            }
        }
        Vary::Array => {
            if rng.chance(30) {
                map.insert("maxItems".into(), json!([10, 20, 50][rng.below(3)]));
            }
        }
    }
    def
}

/// The parameters of one generated tool, as the reference draws them: one integer, one
/// boolean, one enum and one array, plus 0–2 others (strings, numbers, objects, nullable
/// strings), in random order except that a plain string comes first; the first is
/// required, and the second too for a quarter of the tools.
fn parameters(rng: &mut Rng, pool: &[Pooled]) -> Value {
    let kind = |vary: Vary| match vary {
        Vary::Integer(_) => 0,
        Vary::Boolean => 1,
        Vary::Enum => 2,
        Vary::Array => 3,
        Vary::Fixed => 4,
    };
    let draw = |rng: &mut Rng, wanted: usize, taken: &[usize]| {
        let weights: Vec<u32> = pool
            .iter()
            .enumerate()
            .map(|(i, p)| {
                if kind(p.2) == wanted && !taken.contains(&i) {
                    p.1
                } else {
                    0
                }
            })
            .collect();
        rng.weighted(&weights)
    };
    let mut chosen = Vec::new();
    for wanted in 0..4 {
        let next = draw(rng, wanted, &chosen);
        chosen.push(next);
    }
    for _ in 0..rng.below(3) {
        let next = draw(rng, 4, &chosen);
        chosen.push(next);
    }
    for i in (1..chosen.len()).rev() {
        chosen.swap(i, rng.below(i + 1));
    }
    let plain = |i: &usize| matches!(pool[*i].2, Vary::Fixed) && pool[*i].3["type"] == "string";
    if let Some(at) = chosen.iter().position(plain) {
        let first = chosen.remove(at);
        chosen.insert(0, first);
    }
    let required = if rng.chance(25) { 2 } else { 1 };
    let mut properties = Map::new();
    for &i in &chosen {
        let (name, _, vary, base) = &pool[i];
        properties.insert((*name).to_string(), parameter(rng, *vary, base));
    }
    let required: Vec<&str> = chosen[..required].iter().map(|&i| pool[i].0).collect();
    json!({"type": "object", "properties": properties, "required": required})
}

/// The whole manifest of an `n`-tool workload (`n` ≥ 1) drawn from `seed`.
pub fn manifest(n: usize, seed: u64) -> Value {
    let mut rng = Rng(seed);
    let pool = pool();
    let weights: Vec<u32> = TOOLSETS.iter().map(|t| t.1).collect();
    let mut taken = std::collections::HashSet::from(["echo".to_string()]);
    let mut tools = vec![echo()];
    let mut members: Vec<Vec<String>> = vec![Vec::new(); TOOLSETS.len()];
    members[0].push("echo".to_string());
    while tools.len() < n {
        let set = rng.weighted(&weights);
        let verb = VERBS[rng.below(VERBS.len())];
        let noun = NOUNS[rng.below(NOUNS.len())];
        let short = TOOLSETS[set].0;
        let name = format!("{short}_{verb}_{noun}");
        if !taken.insert(name.clone()) {
            continue; // 20,160 combinations: a redraw is rare
        }
        let plural = format!("{noun}s");
        let suffix = SUFFIXES[rng.below(SUFFIXES.len())]
            .replace("{n}", &plural)
            .replace("{t}", short);
        let mut verb_title = verb.to_string();
        verb_title[..1].make_ascii_uppercase();
        let description = format!("{verb_title} {plural} in the {short} integration. {suffix}");
        let emoji = EMOJI[rng.below(EMOJI.len())];
        let parameters = parameters(&mut rng, &pool);
        tools.push(json!({
            "name": name,
            "toolset": format!("syn_{short}"),
            "module": format!("tools.syn_{:04}_{name}", tools.len()),
            "check_fn": check_fn(set),
            "emoji": emoji,
            "schema": {"name": name, "description": description, "parameters": parameters},
        }));
        members[set].push(name);
    }
    let mut toolsets = Map::new();
    for (i, mut names) in members.into_iter().enumerate() {
        names.sort();
        toolsets.insert(
            format!("syn_{}", TOOLSETS[i].0),
            json!({"tools": names, "check_fn": check_fn(i)}),
        );
    }
    let helpers: Vec<Value> = [
        ("_syn_checks.py", "prefilter-reject"),
        ("syn_helper_formatting.py", "prefilter-reject"),
        ("syn_helper_schemas.py", "prefilter-reject"),
        ("syn_helper_lazy_register.py", "ast-reject"),
        ("syn_helper_conditional.py", "ast-reject"),
        ("syn_helper_table.py", "ast-reject"),
    ]
    .iter()
    .map(|(file, expected)| json!({"file": file, "expected": expected}))
    .collect();
    json!({
        "generator": "benches/common/workload.rs",
        "n": n,
        "seed": seed,
        "toolsets": toolsets,
        "helpers": helpers,
        "bench_calls": {
            "tool": "echo",
            "plain_args": {"text": "hello", "count": 3, "loud": false},
            "coerce_args": {"text": "hello", "count": "42", "loud": "true"},
            "coerce_expected": {"text": "hello", "count": 42, "loud": true}
        },
        "tools": tools,
    })
}

/// The helper files (by stem) and their text: three with no registration words at all
/// (the prefilter rejects them), three that mention `registry.register` only where it does
/// not run at the top level (the parser rejects them).
fn helper_text(stem: &str) -> String {
    match stem {
        "syn_helper_lazy_register" => "-- Mentions registry.register only inside a function: never a tool file.\nlocal M = {}\nfunction M.later()\n  registry.register{ name = 'never', toolset = 'x' }\nend\nreturn M\n".into(),
        "syn_helper_conditional" => "-- Mentions registry.register only inside an if.\nif os.getenv and false then\n  registry.register{ name = 'never', toolset = 'x' }\nend\nreturn {}\n".into(),
        "syn_helper_table" => "-- A top-level loop that does not call registry.register.\nlocal names = { 'a', 'b' }\nfor _, n in ipairs(names) do\n  local f = registry.register\nend\nreturn {}\n".into(),
        _ => format!("-- {stem}: formatting helpers with no tool in them.\nlocal M = {{}}\nfunction M.pad(s, n) return s .. string.rep(' ', n - #s) end\nreturn M\n"),
    }
}

fn lua_string(text: &str) -> String {
    let escaped = text
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
        .replace('\r', "\\r");
    format!("\"{escaped}\"")
}

const LUA_KEYWORDS: [&str; 22] = [
    "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if", "in",
    "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
];

fn lua_key(key: &str) -> String {
    let mut chars = key.chars();
    let ident = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ident && !LUA_KEYWORDS.contains(&key) {
        key.to_string()
    } else {
        format!("[{}]", lua_string(key))
    }
}

/// A JSON value as a Lua constructor (empty arrays tagged as arrays).
fn lua_value(value: &Value, indent: &str) -> String {
    let inner = format!("{indent}  ");
    match value {
        Value::Null => "json.null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => lua_string(s),
        Value::Array(items) if items.is_empty() => "json.array({})".into(),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(|v| lua_value(v, &inner)).collect();
            format!("{{ {} }}", parts.join(", "))
        }
        Value::Object(map) if map.is_empty() => "{}".into(),
        Value::Object(map) => {
            let mut text = "{\n".to_string();
            for (key, item) in map {
                let _ = writeln!(
                    text,
                    "{inner}{} = {},",
                    lua_key(key),
                    lua_value(item, &inner)
                );
            }
            text + indent + "}"
        }
    }
}

/// Writes `manifest` as a tool directory: `out/tools-lua/` (one file per tool with an
/// echo handler, the helpers as non-registering candidates, the shared probes in
/// `lib/syn_probes.lua`, true unless `SYN_DISABLE_<TOOLSET>` is set) and `out/toolhost.toml`
/// (which lets the probes read those variables).
pub fn write_lua(manifest: &Value, out: &Path) -> std::io::Result<()> {
    let tools_dir = out.join("tools-lua");
    if tools_dir.exists() {
        std::fs::remove_dir_all(&tools_dir)?;
    }
    std::fs::create_dir_all(tools_dir.join("lib"))?;
    let mut probes = std::collections::BTreeMap::new();
    for (toolset, info) in manifest["toolsets"].as_object().into_iter().flatten() {
        if let Some(probe) = info["check_fn"].as_str() {
            probes.insert(
                probe.to_string(),
                format!("SYN_DISABLE_{}", toolset.to_uppercase()),
            );
        }
    }
    let mut lib =
        "-- Shared availability probes: true unless SYN_DISABLE_<TOOLSET> is set.\nlocal M = {}\n"
            .to_string();
    for (probe, variable) in &probes {
        let _ = writeln!(
            lib,
            "function M.{probe}() return env.get({}) == nil end",
            lua_string(variable)
        );
    }
    lib.push_str("return M\n");
    std::fs::write(tools_dir.join("lib/syn_probes.lua"), lib)?;

    for (index, tool) in manifest["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let name = tool["name"].as_str().unwrap_or_default();
        let mut schema = tool["schema"].clone();
        if let Value::Object(map) = &mut schema {
            map.remove("name");
        }
        let mut body = String::new();
        let check = tool["check_fn"].as_str();
        if check.is_some() {
            body.push_str("local probes = require(\"syn_probes\")\n");
        }
        body.push_str("registry.register{\n");
        let _ = writeln!(body, "  name = {},", lua_string(name));
        let _ = writeln!(
            body,
            "  toolset = {},",
            lua_string(tool["toolset"].as_str().unwrap_or_default())
        );
        let _ = writeln!(
            body,
            "  emoji = {},",
            lua_string(tool["emoji"].as_str().unwrap_or_default())
        );
        body.push_str("  parallel_safe = true,\n");
        let _ = writeln!(body, "  schema = {},", lua_value(&schema, "  "));
        body.push_str("  handler = function(args) return args end,\n");
        if let Some(probe) = check {
            let _ = writeln!(body, "  check_fn = probes.{probe},");
        }
        body.push_str("}\n");
        std::fs::write(tools_dir.join(format!("syn_{index:04}_{name}.lua")), body)?;
    }

    for helper in manifest["helpers"].as_array().into_iter().flatten() {
        let file = helper["file"].as_str().unwrap_or_default();
        let stem = Path::new(file)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .trim_start_matches('_');
        std::fs::write(tools_dir.join(format!("{stem}.lua")), helper_text(stem))?;
    }

    let env: Vec<&String> = probes.values().collect();
    std::fs::write(
        out.join("toolhost.toml"),
        format!(
            "# Generated by benches/common/workload.rs\n[sandbox]\nenv = {}\n",
            serde_json::to_string(&env).unwrap_or_default()
        ),
    )
}
