//! Tool search quality, measured: a labelled set of natural-language queries with the tool
//! each should find, over the shipped tools and the 1,000-tool benchmark workload.
//! Recall@3 (the expected tool among the first three) must be at least 0.9; the figures are
//! printed (and reported by `scripts/bench.sh --json` as `tool_search_recall_at_3` and
//! `tool_search_mrr`).

mod common;

use common::{Fixture, call};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Queries a user or model might write, with the shipped tool they mean.
const SHIPPED: &[(&str, &str)] = &[
    ("current time", "datetime"),
    ("what day of the week is it", "datetime"),
    ("parse an ISO date", "datetime"),
    ("add three days to a date", "datetime"),
    ("difference between two timestamps", "datetime"),
    ("format a date", "datetime"),
    ("multiply numbers", "calc"),
    ("calculate an arithmetic expression", "calc"),
    ("square root of a number", "calc"),
    ("evaluate 2 + 2", "calc"),
    ("do some math", "calc"),
    ("find text in files", "search_files"),
    ("grep for a pattern", "search_files"),
    ("search the code for a function name", "search_files"),
    ("find files matching a glob", "search_files"),
    ("regex search in a folder", "search_files"),
    ("read a file", "read_file"),
    ("show the contents of a file", "read_file"),
    ("view lines of a text file", "read_file"),
    ("open file with line numbers", "read_file"),
    ("write a file", "write_file"),
    ("save text to a file", "write_file"),
    ("create a new file with content", "write_file"),
    ("replace text in a file", "patch"),
    ("edit a file", "patch"),
    ("change one occurrence in a file", "patch"),
    ("modify an existing file", "patch"),
    ("list a directory", "list_dir"),
    ("what files are in this folder", "list_dir"),
    ("show directory entries", "list_dir"),
    ("ls", "list_dir"),
    ("run a command", "run_command"),
    ("execute a program", "run_command"),
    ("run_command", "run_command"),
    ("shell", "run_command"),
    ("launch an allowed program without a shell", "run_command"),
    ("wait a few seconds", "sleep"),
    ("pause for a while", "sleep"),
    ("sleep", "sleep"),
    ("delay milliseconds", "sleep"),
    ("query a json document", "json_query"),
    ("extract a field from JSON", "json_query"),
    ("get items from a json path", "json_query"),
    ("echo the arguments back", "echo"),
    ("return my input unchanged", "echo"),
    ("remember a fact", "memory"),
    ("recall what I said before", "memory"),
    ("keep a task list", "todo"),
    ("add an item to my todo list", "todo"),
    ("plan the steps of a task", "todo"),
];

/// Queries over the synthetic workload (`<integration>_<verb>_<object>` tools).
const WORKLOAD: &[(&str, &str)] = &[
    ("search invoices in vision", "vision_search_invoice"),
    ("create a message in files", "files_create_message"),
    ("schedule an entry in files", "files_schedule_entry"),
    ("get a user from core", "core_get_user"),
    ("search config files", "files_search_config"),
    ("watch a jira metric", "jira_watch_metric"),
    ("restore a git entry", "git_restore_entry"),
    ("delete a branch in core", "core_delete_branch"),
    ("archive the core queue", "core_archive_queue"),
    ("restore a thread in core", "core_restore_thread"),
    ("summarize database entries", "db_summarize_entry"),
    ("list jira items", "jira_list_item"),
    ("delete a translate event", "translate_delete_event"),
    ("inspect a vision snapshot", "vision_inspect_snapshot"),
    ("move a report in translate", "translate_move_report"),
    ("delete a task snapshot", "tasks_delete_snapshot"),
    ("export a core ticket", "core_export_ticket"),
    ("create a user in core", "core_create_user"),
    ("update a git rule", "git_update_rule"),
    ("delete a jira config", "jira_delete_config"),
    ("scan a group of files", "files_scan_group"),
    ("move a docs comment", "docs_move_comment"),
    ("import a token into docs", "docs_import_token"),
    ("create an invoice in the database", "db_create_invoice"),
    ("render a core event", "core_render_event"),
    ("tag an email record", "email_tag_record"),
    ("sync an email issue", "email_sync_issue"),
    ("export a branch from tasks", "tasks_export_branch"),
    ("list core threads", "core_list_thread"),
    ("search finance issues", "finance_search_issue"),
];

/// The 1-based rank of `expected` among `query`'s first 10 matches.
fn rank(host: &toolhost::Host, query: &str, expected: &str) -> Option<usize> {
    let out = call(
        host,
        "tool_search",
        json!({"queries": [query], "limit": 10}),
    );
    let text = out
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| out.to_string());
    let answer: Value = serde_json::from_str(&text).unwrap_or(out);
    answer["results"][0]["matches"]
        .as_array()?
        .iter()
        .position(|m| m == expected)
        .map(|i| i + 1)
}

/// Recall@3 and MRR of `set` on `host`, and the queries that missed the top three.
fn measure(host: &toolhost::Host, set: &[(&str, &str)]) -> (f64, f64, Vec<String>) {
    let mut hits = 0;
    let mut reciprocal = 0.0;
    let mut misses = Vec::new();
    for (query, expected) in set {
        match rank(host, query, expected) {
            Some(r) => {
                reciprocal += 1.0 / r as f64;
                if r <= 3 {
                    hits += 1;
                } else {
                    misses.push(format!("{query:?} → {expected} at {r}"));
                }
            }
            None => misses.push(format!("{query:?} → {expected} not found")),
        }
    }
    let n = set.len() as f64;
    (hits as f64 / n, reciprocal / n, misses)
}

fn shipped_host(fx: &Fixture) -> toolhost::Host {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools-lua");
    let config = fx.write(
        "toolhost.toml",
        "[tool_search]\nenabled = \"on\"\n[sandbox]\ncommands = [\"echo\"]\n",
    );
    toolhost::Host::builder()
        .tools_dir(shipped)
        .cache_dir(fx.cache())
        .memory_store()
        .config_file(config)
        .build()
        .expect("host")
}

/// One workload tool: name, toolset, description, (parameter, description) pairs.
type WorkloadTool = (String, String, String, Vec<(String, String)>);

/// Lua tool files for the 1,000-tool benchmark workload's searchable tools (the 541 whose
/// availability needs no configuration), from `tests/data/workload-1000-searchable.json` —
/// extracted once from the reference registry's 1,000-tool workload (name, toolset,
/// description, parameter names and descriptions), which the labelled queries name, and
/// kept in the repository so the test needs nothing outside it.
fn write_workload(fx: &Fixture) -> PathBuf {
    let data =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/workload-1000-searchable.json");
    let tools: Vec<WorkloadTool> =
        serde_json::from_str(&std::fs::read_to_string(data).expect("workload data")).unwrap();
    // The labelled queries name these tools: a shorter file would quietly raise recall.
    assert_eq!(
        tools.len(),
        541,
        "the searchable workload has all its tools"
    );
    let quote = |text: &str| format!("[==[{text}]==]");
    let mut source = String::new();
    for (name, toolset, description, parameters) in &tools {
        let properties: Vec<String> = parameters
            .iter()
            .map(|(key, about)| {
                format!(
                    "[ {} ] = {{ type = \"string\", description = {} }}",
                    quote(key),
                    quote(about)
                )
            })
            .collect();
        source.push_str(&format!(
            "registry.register{{ name = {}, toolset = {}, schema = {{ description = {}, parameters = {{ type = \"object\", properties = {{ {} }} }} }}, handler = function() return \"\" end }}\n",
            quote(name),
            quote(toolset),
            quote(description),
            properties.join(", ")
        ));
    }
    let dir = fx.root().join("workload-tools");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("workload.lua"), source).unwrap();
    dir
}

#[test]
fn tool_search_finds_the_right_tool_for_natural_queries() {
    assert!(SHIPPED.len() + WORKLOAD.len() >= 80);
    let fx = Fixture::new();
    let host = shipped_host(&fx);
    let (recall_shipped, mrr_shipped, misses_shipped) = measure(&host, SHIPPED);

    let workload = write_workload(&fx);
    let config = fx.write("workload.toml", "[tool_search]\nenabled = \"on\"\n");
    let big = toolhost::Host::builder()
        .tools_dir(workload)
        .cache_dir(fx.root().join("cache-1000"))
        .memory_store()
        .config_file(config)
        .build()
        .expect("workload host");
    let (recall_workload, mrr_workload, misses_workload) = measure(&big, WORKLOAD);

    let n = (SHIPPED.len() + WORKLOAD.len()) as f64;
    let recall =
        (recall_shipped * SHIPPED.len() as f64 + recall_workload * WORKLOAD.len() as f64) / n;
    let mrr = (mrr_shipped * SHIPPED.len() as f64 + mrr_workload * WORKLOAD.len() as f64) / n;
    println!(
        "{}",
        json!({"tool_search_recall_at_3": recall, "tool_search_mrr": mrr,
               "shipped": {"recall_at_3": recall_shipped, "mrr": mrr_shipped},
               "workload_1000": {"recall_at_3": recall_workload, "mrr": mrr_workload}})
    );
    assert!(
        recall >= 0.9,
        "recall@3 {recall:.3} (mrr {mrr:.3}); misses: {misses_shipped:#?} {misses_workload:#?}"
    );
}
