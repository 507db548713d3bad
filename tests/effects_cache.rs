//! The effects cache on a warm start (docs/effects.md, docs/discovery.md): each file's
//! resolved effects are kept in `effects.json` and believed only while the modules they
//! were resolved through are where they were, with the same content. Every test starts
//! cold, then changes something between two starts (or hand-edits the cache) and checks
//! that the warm start shows what a cold one would.

mod common;

use common::Fixture;
use serde_json::{Value, json};

/// A tool `name` whose handler runs `body` (no annotations declared: they are derived).
fn tool(name: &str, prelude: &str, body: &str) -> String {
    format!(
        "{prelude}\nregistry.register{{ name = '{name}', toolset = 't',\n  schema = {{ parameters = {{ type = 'object' }} }},\n  handler = function(args, ctx)\n{body}\n  end }}\n"
    )
}

/// `toolhost list --json`, by tool name: (effects, annotations) of each tool.
fn listed(fx: &Fixture) -> Vec<(String, Value, Value)> {
    let mut listed: Vec<_> = fx
        .list_json()
        .into_iter()
        .map(|tool| {
            (
                tool["name"].as_str().unwrap_or_default().to_string(),
                tool["effects"].clone(),
                tool["annotations"].clone(),
            )
        })
        .collect();
    listed.sort_by(|a, b| a.0.cmp(&b.0));
    listed
}

fn effects_of(fx: &Fixture, name: &str) -> (Value, Value) {
    let (_, effects, annotations) = listed(fx)
        .into_iter()
        .find(|(listed, ..)| listed == name)
        .unwrap_or_else(|| panic!("{name} is not listed"));
    (effects, annotations)
}

fn cache_file(fx: &Fixture) -> std::path::PathBuf {
    fx.cache().join("effects.json")
}

fn cache_json(fx: &Fixture) -> Value {
    serde_json::from_slice(&std::fs::read(cache_file(fx)).expect("effects.json")).expect("JSON")
}

/// A tool that reads through `lib/m.lua`.
fn reader_through_a_module(fx: &Fixture) {
    fx.write(
        "tools-lua/lib/m.lua",
        "local M = {}\nfunction M.get(p) return fs.read(p) end\nreturn M\n",
    );
    fx.tool(
        "r.lua",
        &tool("r", "local m = require('m')", "    return m.get('x.txt')"),
    );
}

#[test]
fn a_warm_start_reads_the_resolved_effects_and_leaves_the_cache_as_it_was() {
    let fx = Fixture::new();
    reader_through_a_module(&fx);
    let cold = listed(&fx);
    let written = std::fs::read(cache_file(&fx)).expect("effects.json");
    let resolved = cache_json(&fx)["resolved"].clone();
    assert_eq!(resolved.as_object().map(|r| r.len()), Some(1), "{resolved}");
    assert_eq!(listed(&fx), cold);
    assert_eq!(
        std::fs::read(cache_file(&fx)).expect("still there"),
        written
    );
}

#[test]
fn a_module_edited_between_two_starts_changes_a_cached_tools_effects_and_annotations() {
    let fx = Fixture::new();
    reader_through_a_module(&fx);
    let (effects, annotations) = effects_of(&fx, "r");
    assert_eq!(effects, json!(["fs.read"]));
    assert_eq!(annotations["read_only"], json!(true), "{annotations}");
    assert_eq!(effects_of(&fx, "r").0, json!(["fs.read"]));
    fx.write(
        "tools-lua/lib/m.lua",
        "local M = {}\nfunction M.get(p) return fs.write(p, 'x') end\nreturn M\n",
    );
    let (effects, annotations) = effects_of(&fx, "r");
    assert_eq!(effects, json!(["fs.write"]));
    assert_eq!(annotations["read_only"], json!(false), "{annotations}");
    assert_eq!(annotations["destructive"], json!(true), "{annotations}");
}

#[test]
fn a_module_added_earlier_in_the_search_path_is_followed() {
    let fx = Fixture::new();
    fx.write(
        "tools-lua/lib/x.lua",
        "return { go = function() return 1 end }\n",
    );
    fx.tool(
        "pkg/tool.lua",
        &tool(
            "pkg",
            "local x = require('x')",
            "    return tostring(x.go())",
        ),
    );
    assert_eq!(effects_of(&fx, "pkg").0, json!([]));
    assert_eq!(effects_of(&fx, "pkg").0, json!([]));
    // The package's own folder is searched before lib/.
    fx.write(
        "tools-lua/pkg/x.lua",
        "return { go = function() return proc.run{ argv = { 'true' } } end }\n",
    );
    let (effects, annotations) = effects_of(&fx, "pkg");
    assert_eq!(effects, json!(["proc"]));
    assert_eq!(annotations["open_world"], json!(true), "{annotations}");
}

#[test]
fn a_removed_module_makes_the_site_unknown_again() {
    let fx = Fixture::new();
    fx.write(
        "tools-lua/lib/m.lua",
        "return { get = function(p) return fs.read(p) end }\n",
    );
    // Required in the handler: the file still loads once the module is gone.
    fx.tool(
        "r.lua",
        &tool("r", "", "    return require('m').get('x.txt')"),
    );
    assert_eq!(effects_of(&fx, "r").0, json!(["fs.read"]));
    assert_eq!(effects_of(&fx, "r").0, json!(["fs.read"]));
    std::fs::remove_file(fx.root().join("tools-lua/lib/m.lua")).expect("removed");
    let out = fx.toolhost().args(["explain", "r"]).output().expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("require('m'): module 'm' not found"),
        "{text}"
    );
    let (effects, annotations) = effects_of(&fx, "r");
    assert_eq!(effects, json!(["unknown"]));
    assert!(annotations.get("read_only").is_none(), "{annotations}");
}

#[test]
fn a_tool_file_edited_between_two_starts_shows_its_new_effects() {
    let fx = Fixture::new();
    reader_through_a_module(&fx);
    assert_eq!(effects_of(&fx, "r").0, json!(["fs.read"]));
    fx.tool(
        "r.lua",
        &tool(
            "r",
            "local m = require('m')",
            "    store.set('k', m.get('x.txt'))\n    return 'ok'",
        ),
    );
    assert_eq!(effects_of(&fx, "r").0, json!(["fs.read", "store.write"]));
}

/// Rewrites every resolved entry of the cache with `forge`.
fn forge_resolved(fx: &Fixture, forge: impl Fn(&mut Value)) {
    let mut cache = cache_json(fx);
    for entry in cache["resolved"]
        .as_object_mut()
        .expect("resolved entries")
        .values_mut()
    {
        forge(entry);
    }
    std::fs::write(cache_file(fx), cache.to_string()).expect("forged");
}

/// A tool that writes through `lib/m.lua`, started once (cold).
fn writer_started_once(fx: &Fixture) {
    fx.write(
        "tools-lua/lib/m.lua",
        "return { put = function(p) return fs.write(p, 'x') end }\n",
    );
    fx.tool(
        "w.lua",
        &tool("w", "local m = require('m')", "    return m.put('x.txt')"),
    );
    assert_eq!(effects_of(fx, "w").0, json!(["fs.write"]));
}

/// An entry forged to claim no effects at all (a read-only tool).
fn claim_nothing(entry: &mut Value) {
    for sites in entry["tools"].as_object_mut().expect("tools").values_mut() {
        *sites = json!("");
    }
}

/// What makes the tests below mean something: an entry whose every dependency still holds
/// is used as it is, without resolving again (so an entry they forge would be believed if
/// its module digest, path or file digest were not checked). The cache is trusted like the
/// other caches once what it rests on is checked.
#[test]
fn an_entry_whose_dependencies_hold_is_used_without_resolving_again() {
    let fx = Fixture::new();
    writer_started_once(&fx);
    forge_resolved(&fx, claim_nothing);
    assert_eq!(effects_of(&fx, "w").0, json!([]));
}

#[test]
fn a_forged_entry_with_a_wrong_module_digest_is_not_believed() {
    let fx = Fixture::new();
    writer_started_once(&fx);
    forge_resolved(&fx, |entry| {
        claim_nothing(entry);
        entry["followed"][0]["Module"][3] = json!("0123456789abcdef1");
    });
    let (effects, annotations) = effects_of(&fx, "w");
    assert_eq!(effects, json!(["fs.write"]));
    assert_eq!(annotations["read_only"], json!(false), "{annotations}");
}

#[test]
fn a_forged_entry_claiming_another_module_path_is_not_believed() {
    let fx = Fixture::new();
    writer_started_once(&fx);
    fx.write("tools-lua/lib/quiet.lua", "return {}\n");
    forge_resolved(&fx, |entry| {
        claim_nothing(entry);
        let module = &mut entry["followed"][0]["Module"];
        let path = module[1]
            .as_str()
            .expect("path")
            .replace("m.lua", "quiet.lua");
        module[1] = json!(path);
    });
    assert_eq!(effects_of(&fx, "w").0, json!(["fs.write"]));
}

#[test]
fn a_forged_entry_under_another_files_digest_is_not_believed() {
    let fx = Fixture::new();
    writer_started_once(&fx);
    // The entry of the file as it was is moved under the key of the file as it is now.
    let mut cache = cache_json(&fx);
    let entries = cache["resolved"].as_object_mut().expect("resolved");
    let (old_key, mut entry) = entries
        .iter()
        .next()
        .map(|(k, v)| (k.clone(), v.clone()))
        .expect("one");
    claim_nothing(&mut entry);
    fx.tool(
        "w.lua",
        &tool("w", "local m = require('m')", "    return m.put('y.txt')"),
    );
    let forged_key = old_key.replacen(|c: char| c.is_ascii_hexdigit(), "0", 1);
    entries.insert(forged_key, entry.clone());
    entries.insert(old_key, entry);
    std::fs::write(cache_file(&fx), cache.to_string()).expect("forged");
    assert_eq!(effects_of(&fx, "w").0, json!(["fs.write"]));
}

#[test]
fn a_forged_entry_naming_a_text_that_is_not_there_reads_as_a_miss() {
    let fx = Fixture::new();
    writer_started_once(&fx);
    forge_resolved(&fx, |entry| {
        for sites in entry["tools"].as_object_mut().expect("tools").values_mut() {
            *sites = json!("0,0,0,1;9999,9999,9999,1");
        }
    });
    assert_eq!(effects_of(&fx, "w").0, json!(["fs.write"]));
}

#[test]
fn a_truncated_or_garbage_effects_json_reads_as_empty() {
    let fx = Fixture::new();
    writer_started_once(&fx);
    let whole = std::fs::read(cache_file(&fx)).expect("effects.json");
    for damaged in [
        whole[..whole.len() / 2].to_vec(),
        b"\x00\xffnot json at all".to_vec(),
        b"{\"toolhost\": 1, \"files\": [], \"resolved\": null}".to_vec(),
    ] {
        std::fs::write(cache_file(&fx), damaged).expect("damaged");
        assert_eq!(effects_of(&fx, "w").0, json!(["fs.write"]));
        assert_eq!(std::fs::read(cache_file(&fx)).expect("rewritten"), whole);
    }
}

#[test]
fn cold_and_warm_starts_give_identical_effects_for_a_directory_with_modules() {
    let fx = Fixture::new();
    fx.write(
        "tools-lua/lib/base.lua",
        "return { env = function() return env.get('HOME') end }\n",
    );
    fx.write(
        "tools-lua/lib/nested/mid.lua",
        "local base = require('base')\nreturn { go = function() base.env(); return store.get('k') end }\n",
    );
    fx.write("tools-lua/lib/broken.lua", "return { this is not lua\n");
    fx.tool(
        "a.lua",
        &tool(
            "a",
            "local mid = require('nested.mid')",
            "    return mid.go()",
        ),
    );
    // Required in the handler: at the top level these would fail the file's load.
    fx.tool("b.lua", &tool("b", "", "    return require('missing')"));
    fx.tool("c.lua", &tool("c", "", "    return require('broken')"));
    fx.tool(
        "pkg/tool.lua",
        &tool(
            "p",
            "local mid = require('nested.mid')\nlocal own = require('own')",
            "    own.go(); return mid.go()",
        ),
    );
    fx.write(
        "tools-lua/pkg/own.lua",
        "return { go = function() return ctx_free_call end }\n",
    );
    let cold = listed(&fx);
    let warm = listed(&fx);
    assert_eq!(cold, warm);
    let by_name = |name: &str| {
        cold.iter()
            .find(|(listed, ..)| listed == name)
            .map(|(_, effects, _)| effects.clone())
    };
    assert_eq!(by_name("a"), Some(json!(["env", "store.read"])));
    assert_eq!(by_name("b"), Some(json!(["unknown"])));
    assert_eq!(by_name("c"), Some(json!(["unknown"])));
    assert_eq!(by_name("p"), Some(json!(["env", "store.read"])));
    // The same again with the cache deleted: what a cold start shows.
    std::fs::remove_dir_all(fx.cache()).expect("cache removed");
    assert_eq!(listed(&fx), cold);
}

#[test]
fn a_lib_folder_created_between_two_starts_is_searched() {
    let fx = Fixture::new();
    fx.tool(
        "r.lua",
        &tool("r", "", "    return require('m').get('x.txt')"),
    );
    assert_eq!(effects_of(&fx, "r").0, json!(["unknown"]));
    assert_eq!(effects_of(&fx, "r").0, json!(["unknown"]));
    fx.write(
        "tools-lua/lib/m.lua",
        "return { get = function(p) return fs.read(p) end }\n",
    );
    let (effects, annotations) = effects_of(&fx, "r");
    assert_eq!(effects, json!(["fs.read"]));
    assert_eq!(annotations["read_only"], json!(true), "{annotations}");
}

// The cache is read in one pass: summaries only delimited (parsed at a miss), resolved
// entries typed. What that makes newly possible to get wrong:

/// Two tools writing through `lib/m.lua`, started twice: cold, then warm (a warm start that
/// takes both entries and parses no summary).
fn two_writers_started_warm(fx: &Fixture) {
    fx.write(
        "tools-lua/lib/m.lua",
        "return { put = function(p) return fs.write(p, 'x') end }\n",
    );
    for name in ["w", "v"] {
        fx.tool(
            &format!("{name}.lua"),
            &tool(name, "local m = require('m')", "    return m.put('x.txt')"),
        );
    }
    let cold = listed(fx);
    let written = std::fs::read(cache_file(fx)).expect("effects.json");
    assert_eq!(listed(fx), cold);
    assert_eq!(std::fs::read(cache_file(fx)).expect("kept"), written);
}

#[test]
fn a_module_summary_left_as_text_by_a_warm_start_serves_a_later_miss() {
    let fx = Fixture::new();
    two_writers_started_warm(&fx);
    // `v`'s entry misses; the module's summary comes from the cache's text.
    fx.tool(
        "v.lua",
        &tool(
            "v",
            "local m = require('m')",
            "    store.set('k', 1); return m.put('x.txt')",
        ),
    );
    assert_eq!(effects_of(&fx, "v").0, json!(["fs.write", "store.write"]));
    assert_eq!(effects_of(&fx, "w").0, json!(["fs.write"]));
    let warm = listed(&fx);
    std::fs::remove_dir_all(fx.cache()).expect("cache removed");
    assert_eq!(listed(&fx), warm);
}

#[test]
fn an_entry_not_used_by_a_load_that_writes_is_written_back_as_it_was() {
    let fx = Fixture::new();
    two_writers_started_warm(&fx);
    let before = cache_json(&fx);
    let w_entry = |cache: &Value| {
        let resolved = cache["resolved"].as_object().expect("resolved").clone();
        resolved
            .into_iter()
            .find(|(key, _)| key.ends_with("w.lua"))
            .expect("w's entry")
    };
    fx.tool("v.lua", &tool("v", "", "    return env.get('HOME')"));
    assert_eq!(effects_of(&fx, "v").0, json!(["env"]));
    let text =
        String::from_utf8(std::fs::read(cache_file(&fx)).expect("rewritten")).expect("UTF-8");
    let (key, entry) = w_entry(&before);
    assert_eq!(w_entry(&cache_json(&fx)), (key, entry.clone()));
    assert!(text.contains(&entry.to_string()), "{text}");
}

#[test]
fn an_entry_of_another_shape_makes_the_whole_cache_read_as_empty() {
    let damages: [fn(&mut Value); 6] = [
        |entry: &mut Value| entry["followed"][0]["Module"] = json!(["m"]),
        |entry: &mut Value| entry["followed"][0] = json!({"Elsewhere": ["m", "x"]}),
        |entry: &mut Value| entry["texts"] = json!([1]),
        |entry: &mut Value| entry["dirs"] = json!("not a digest"),
        |entry: &mut Value| entry["followed"][0]["Module"][3] = json!("0123456789ABCDEF1"),
        |entry: &mut Value| entry["tools"]["w"] = json!(["0,0,0,1"]),
    ];
    for damage in damages {
        let fx = Fixture::new();
        writer_started_once(&fx);
        forge_resolved(&fx, |entry| {
            claim_nothing(entry);
            damage(entry);
        });
        let (effects, annotations) = effects_of(&fx, "w");
        assert_eq!(effects, json!(["fs.write"]));
        assert_eq!(annotations["read_only"], json!(false), "{annotations}");
    }
}

#[test]
fn an_entry_resolved_with_other_search_folders_is_not_believed() {
    let fx = Fixture::new();
    writer_started_once(&fx);
    forge_resolved(&fx, |entry| {
        claim_nothing(entry);
        // The digest of some other folder list.
        entry["dirs"] = json!("0123456789abcdef1f");
    });
    assert_eq!(effects_of(&fx, "w").0, json!(["fs.write"]));
}

#[test]
fn an_entry_written_with_escapes_reads_as_the_same_entry() {
    let fx = Fixture::new();
    writer_started_once(&fx);
    // Believed as it is (see an_entry_whose_dependencies_hold_is_used_without_resolving_again),
    // so a claim of nothing shows whether the escaped paths were read as the same paths.
    forge_resolved(&fx, claim_nothing);
    let text = String::from_utf8(std::fs::read(cache_file(&fx)).expect("forged")).expect("UTF-8");
    assert!(text.contains('/'));
    std::fs::write(cache_file(&fx), text.replace('/', "\\/")).expect("escaped");
    assert_eq!(effects_of(&fx, "w").0, json!([]));
}

#[test]
fn a_tool_file_whose_path_needs_escaping_is_found_on_a_warm_start() {
    let fx = Fixture::new();
    fx.write(
        "tools-lua/lib/m.lua",
        "return { put = function(p) return fs.write(p, 'x') end }\n",
    );
    let file = "wé\"ird\\name.lua";
    fx.tool(
        file,
        &tool("w", "local m = require('m')", "    return m.put('x.txt')"),
    );
    let cold = listed(&fx);
    assert_eq!(effects_of(&fx, "w").0, json!(["fs.write"]));
    assert_eq!(listed(&fx), cold);
    forge_resolved(&fx, claim_nothing);
    assert_eq!(
        effects_of(&fx, "w").0,
        json!([]),
        "the forged entry was not found"
    );
}

#[test]
fn an_older_revisions_cache_reads_as_empty_and_is_replaced() {
    let fx = Fixture::new();
    writer_started_once(&fx);
    let current = std::fs::read(cache_file(&fx)).expect("effects.json");
    forge_resolved(&fx, claim_nothing);
    let mut old = cache_json(&fx);
    let revision = old["toolhost"].as_str().expect("revision").to_string();
    let (version, _) = revision.split_once('/').expect("version/revision");
    old["toolhost"] = json!(format!("{version}/effects-3"));
    std::fs::write(cache_file(&fx), old.to_string()).expect("old revision");
    assert_eq!(effects_of(&fx, "w").0, json!(["fs.write"]));
    assert_eq!(std::fs::read(cache_file(&fx)).expect("rewritten"), current);
}
