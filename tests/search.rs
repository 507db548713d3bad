//! Tool search (docs/tool-search.md): deferred tools, the three bridge tools, ranking and errors.

mod common;

use common::{Fixture, call, call_in};
use serde_json::{Value, json};
use toolhost::{CallContext, Format, Host, Selection};

/// 45 generated tools in three toolsets plus four hand-made ones: 49, above the default
/// threshold of 40.
fn fixture() -> Fixture {
    let fx = Fixture::new();
    let mut file = String::new();
    let verbs = ["list", "get", "create", "delete", "update"];
    let nouns = ["ticket", "user", "invoice"];
    for (i, verb) in verbs.iter().enumerate() {
        for noun in nouns {
            for n in 0..3 {
                file.push_str(&format!(
                    "registry.register{{ name = '{noun}_{verb}_{n}', toolset = '{noun}s', parallel_safe = true,\n  schema = {{ description = '{verb} a {noun} record number {i}{n}', parameters = {{ type = 'object', properties = {{ id = {{ type = 'integer' }} }} }} }},\n  handler = function(args) return '{noun}_{verb}_{n}:' .. json.encode(args) end }}\n"
                ));
            }
        }
    }
    fx.tool("generated.lua", &file);
    fx.tool(
        "special.lua",
        r#"registry.register{ name = "archive_file", toolset = "files",
  schema = { description = "Move an old file into the archive", parameters = { type = "object",
    properties = { path = { type = "string" } }, required = { "path" } } },
  handler = function(args) return "archived " .. args.path end }
registry.register{ name = "zebra_migration", toolset = "files",
  schema = { description = "Plan a zebra migration", parameters = { type = "object" } },
  handler = function() return "zebras" end }
registry.register{ name = "echo", toolset = "core",
  schema = { description = "Echo", parameters = { type = "object" } },
  handler = function(args) return args end }
registry.hook("pre_tool_call", function(call)
  local seen = store.get("seen") or json.array()
  seen[#seen + 1] = call.tool_name
  store.set("seen", seen)
end)
registry.register{ name = "seen", toolset = "core",
  schema = { description = "Names the hook saw", parameters = { type = "object" } },
  handler = function() return json.encode(store.get("seen")) end }"#,
    );
    fx
}

fn host(fx: &Fixture) -> Host {
    fx.host_with("[tool_search]\ncore = [\"core\"]\n")
}

fn names(list: &toolhost::Definitions) -> Vec<String> {
    list.iter()
        .map(|d| d["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

fn answer(out: &Value) -> Value {
    serde_json::from_str(
        out.as_str()
            .unwrap_or_else(|| panic!("text result expected: {out}")),
    )
    .unwrap()
}

fn search(host: &Host, queries: Value) -> Value {
    answer(&call(host, "tool_search", json!({ "queries": queries })))
}

#[test]
fn many_tools_are_deferred_behind_three_bridge_tools_appended_last() {
    let fx = fixture();
    let host = host(&fx);
    let list = host.tool_definitions(&Selection::default());
    assert_eq!(
        names(&list),
        ["echo", "seen", "tool_search", "tool_describe", "tool_call"]
    );
    let description = list[2]["function"]["description"].as_str().unwrap();
    assert!(description.contains("47 more tools"), "{description}");
    assert!(
        description.contains("files (2), invoices (15), tickets (15), users (15)"),
        "{description}"
    );
    let anthropic = host.tool_definitions(&Selection::default().with_format(Format::Anthropic));
    assert_eq!(anthropic[4]["name"], "tool_call");

    let fx = fixture();
    let off = fx.host_with("[tool_search]\nenabled = \"off\"\n");
    assert_eq!(off.tool_definitions(&Selection::default()).len(), 49);
    let fx = fixture();
    let small = fx.host_with("[tool_search]\nauto_threshold = 100\n");
    assert_eq!(small.tool_definitions(&Selection::default()).len(), 49);
}

#[test]
fn ranking_exact_name_first_then_bm25_with_stemming() {
    let fx = fixture();
    let host = host(&fx);
    let out = search(
        &host,
        json!(["ticket_delete_1", "archived files", "zebra", "invoice"]),
    );
    let matches = |i: usize| -> Vec<String> {
        out["results"][i]["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(out["results"][0]["query"], "ticket_delete_1");
    assert_eq!(
        matches(0)[0],
        "ticket_delete_1",
        "an exact name match ranks first"
    );
    assert_eq!(
        matches(1)[0],
        "archive_file",
        "stemming: archived ~ archive, files ~ file; the name counts most"
    );
    assert_eq!(
        matches(2),
        ["zebra_migration"],
        "only tools sharing a term with the query are matches"
    );
    assert_eq!(matches(3).len(), 5, "the default limit");
    assert_eq!(
        matches(3),
        [
            "invoice_create_0",
            "invoice_create_1",
            "invoice_create_2",
            "invoice_delete_0",
            "invoice_delete_1"
        ],
        "ties break by name"
    );
    assert_eq!(
        out["tools"]["archive_file"],
        json!({"description": "Move an old file into the archive", "required": ["path"], "toolset": "files"})
    );
    let one = search(&host, json!("zebra"));
    assert_eq!(
        one["results"][0]["matches"],
        json!(["zebra_migration"]),
        "a bare string is one query"
    );
    let nothing = search(&host, json!(["quantum"]));
    assert_eq!(nothing["results"][0]["matches"], json!([]));
    let limited = answer(&call(
        &host,
        "tool_search",
        json!({"queries": ["user"], "limit": 2}),
    ));
    assert_eq!(
        limited["results"][0]["matches"].as_array().unwrap().len(),
        2
    );
}

#[test]
fn describe_and_call_reach_the_real_tool() {
    let fx = fixture();
    let host = host(&fx);
    let described = answer(&call(
        &host,
        "tool_describe",
        json!({"names": ["archive_file", "nope"]}),
    ));
    assert_eq!(
        described["tools"]["archive_file"]["parameters"]["required"],
        json!(["path"])
    );
    assert_eq!(described["not_found"], json!(["nope"]));
    assert!(described["hint"].as_str().unwrap().contains("tool_search"));

    let direct = call(&host, "user_get_2", json!({"id": 7}));
    for args in [
        json!({"name": "user_get_2", "arguments": {"id": 7}}),
        json!({"name": "user_get_2", "arguments": "{\"id\": \"7\"}"}),
        json!({"calls": [{"name": "user_get_2", "arguments": {"id": 7}}]}),
    ] {
        assert_eq!(
            call(&host, "tool_call", args),
            direct,
            "identical to the direct call"
        );
    }
    let blank = call(
        &host,
        "tool_call",
        json!({"name": "zebra_migration", "arguments": ""}),
    );
    assert_eq!(blank, json!("zebras"));
    let null = call(
        &host,
        "tool_call",
        json!({"name": "zebra_migration", "arguments": null}),
    );
    assert_eq!(null, json!("zebras"));
    // Validation applies to the real tool.
    let invalid = call(
        &host,
        "tool_call",
        json!({"name": "archive_file", "arguments": {}}),
    );
    assert_eq!(invalid["error_type"], "invalid_arguments");
    assert!(
        invalid["error"]
            .as_str()
            .unwrap()
            .starts_with("Invalid arguments for archive_file")
    );
    // Hooks see the real name, never the bridge.
    let seen: Vec<String> =
        serde_json::from_str(call(&host, "seen", json!({})).as_str().unwrap()).unwrap();
    assert!(
        seen.contains(&"user_get_2".to_string()) && !seen.iter().any(|n| n == "tool_call"),
        "{seen:?}"
    );
}

#[test]
fn every_bridge_misuse_says_what_to_do_instead() {
    let fx = fixture();
    let host = host(&fx);
    let cases = [
        (
            "tool_search",
            json!({"queries": ["a", "b", "c", "d", "e", "f", "g", "h"]}),
            "too many queries (at most 7 per call, got 8)",
        ),
        (
            "tool_search",
            json!({"queries": []}),
            "give at least one non-blank query",
        ),
        (
            "tool_search",
            json!({"queries": ["  ", ""]}),
            "give at least one non-blank query",
        ),
        (
            "tool_call",
            json!({"name": "user_get_1", "arguments": "{\"id\": 1,,}"}),
            "not valid JSON",
        ),
        ("tool_search", json!({}), "give a list of search strings"),
        (
            "tool_describe",
            json!({"names": (0..11).map(|i| format!("t{i}")).collect::<Vec<_>>()}),
            "at most 10 names",
        ),
        (
            "tool_call",
            json!({"name": "echo", "arguments": {}}),
            "echo is not an unlisted tool: call echo directly",
        ),
        (
            "tool_call",
            json!({"name": "tool_search"}),
            "tool_search is a bridge tool; call tool_search directly",
        ),
        (
            "tool_call",
            json!({"calls": [{"name": "user_get_1"}, {"name": "user_get_2"}]}),
            "exactly one call per tool_call",
        ),
        (
            "tool_call",
            json!({"name": "no_such_tool"}),
            "no_such_tool is not an unlisted tool",
        ),
        (
            "tool_call",
            json!({"arguments": {}}),
            "give the tool's name",
        ),
        (
            "tool_call",
            json!({"name": "user_get_1", "arguments": "[1]"}),
            "must hold a JSON object",
        ),
    ];
    for (tool, args, expected) in cases {
        let out = call(&host, tool, args.clone());
        assert_eq!(
            out["error_type"], "invalid_arguments",
            "{tool} {args}: {out}"
        );
        assert!(
            out["error"].as_str().unwrap().contains(expected),
            "{tool} {args}: {out}"
        );
    }
}

#[test]
fn search_is_confined_to_the_callers_selection() {
    let fx = fixture();
    let host = fx.host_with("[tool_search]\nenabled = \"on\"\n");
    let only_users = CallContext::default().with_toolsets(["users"]);
    let out = answer(&call_in(
        &host,
        "tool_search",
        json!({"queries": ["ticket", "user"]}),
        &only_users,
    ));
    assert_eq!(out["results"][0]["matches"], json!([]));
    assert_eq!(out["results"][1]["matches"].as_array().unwrap().len(), 5);
    let refused = call_in(
        &host,
        "tool_call",
        json!({"name": "ticket_get_0"}),
        &only_users,
    );
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("not an unlisted tool"),
        "{refused}"
    );
}

#[test]
fn without_search_the_bridge_names_are_unknown() {
    let fx = fixture();
    let host = fx.host_with("[tool_search]\nenabled = \"off\"\n");
    assert_eq!(
        call(&host, "tool_search", json!({"queries": ["x"]}))["error_type"],
        "unknown_tool"
    );
}

/// What one `post_tool_call` saw: tool, status, call id.
type Seen = (String, String, Option<String>);

/// Records every `post_tool_call`.
#[derive(Clone, Default)]
struct PostRecorder(std::sync::Arc<parking_lot::Mutex<Vec<Seen>>>);

impl toolhost::Hook for PostRecorder {
    fn post_tool_call(&self, post: &toolhost::PostCall<'_>) {
        self.0.lock().push((
            post.call.tool_name.to_string(),
            format!("{:?}", post.status),
            post.call.ctx.tool_call_id.clone(),
        ));
    }
}

#[test]
fn an_inline_bridge_answer_emits_exactly_one_post_tool_call() {
    let fx = fixture();
    let recorder = PostRecorder::default();
    let path = fx.write("toolhost.toml", "[tool_search]\nenabled = \"on\"\n");
    let host = toolhost::Host::builder()
        .tools_dir(fx.tools())
        .cache_dir(fx.cache())
        .config_file(path)
        .hook(recorder.clone())
        .build()
        .expect("host");
    let ctx = CallContext::default().with_tool_call_id("call-9");
    let out = call_in(&host, "tool_search", json!({"queries": ["user"]}), &ctx);
    assert!(out.get("error_type").is_none(), "{out}");
    let seen = recorder.0.lock().clone();
    assert_eq!(
        seen,
        vec![(
            "tool_search".to_string(),
            "Ok".to_string(),
            Some("call-9".to_string())
        )]
    );
}

#[test]
fn malformed_tool_call_arguments_say_where_parsing_stopped() {
    let fx = fixture();
    let host = host(&fx);
    let out = call(
        &host,
        "tool_call",
        json!({"name": "user_get_1", "arguments": "{\"id\": 1,,}"}),
    );
    let message = out["error"].as_str().unwrap();
    assert!(message.contains("not valid JSON"), "{message}");
    assert!(message.contains("parsing stopped at \",}\""), "{message}");
}

#[test]
fn the_search_description_names_only_toolsets_with_available_deferred_tools() {
    let fx = fixture();
    fx.tool(
        "secret.lua",
        r#"registry.register{ name = "vault_read", toolset = "vault",
  requires_env = { "TOOLHOST_TEST_NEVER_SET_VAULT" },
  schema = { description = "Read a secret", parameters = { type = "object" } },
  handler = function() return "s" end }"#,
    );
    let host = host(&fx);
    let list = host.tool_definitions(&Selection::default());
    let search = list
        .iter()
        .find(|d| d["function"]["name"] == "tool_search")
        .expect("tool_search is listed");
    let description = search["function"]["description"].as_str().unwrap();
    assert!(description.starts_with("47 more tools"), "{description}");
    assert!(!description.contains("vault"), "{description}");
    assert!(description.contains("tickets (15)"), "{description}");
}
