//! A cold start loads each file as soon as the parser threads judged it: the host it builds
//! (verdicts, tools, errors and the order they are logged in, the caches it writes) must be
//! the one judging every file first builds, whatever the files are.

use super::{Host, HostBuilder};
use crate::discovery::{PARSE_PANIC_MARKER, Reason};
use std::path::{Path, PathBuf};

/// A registering file with one tool.
fn tool(name: &str) -> String {
    format!(
        "registry.register{{ name = \"{name}\", toolset = \"t\",\n  \
         schema = {{ description = \"{name}\", parameters = {{ type = \"object\" }} }},\n  \
         handler = function() return \"{name}\" end }}\n"
    )
}

/// `count` files of every kind discovery tells apart, in an order that mixes them: tools,
/// helpers, registrations only inside functions, parse errors, bad UTF-8, nesting too deep,
/// files that raise or register something invalid or a duplicate name (rejected for being
/// later in the order), unreadable files, a package and a link to nothing.
fn mixed_dir(root: &Path, count: usize) -> PathBuf {
    let tools = root.join("tools");
    std::fs::create_dir_all(tools.join("pkg")).unwrap();
    for i in 0..count {
        let file = tools.join(format!("f{i:03}.lua"));
        let bytes: Vec<u8> = match i % 10 {
            0 => tool(&format!("tool_{i}")).into_bytes(),
            1 => b"local M = {}\nfunction M.twice(x) return 2 * x end\nreturn M\n".to_vec(),
            2 => b"local function later()\n  registry.register{ name = 'never' }\nend\n".to_vec(),
            3 => format!(
                "{}\nregistry.register{{ name = \"cut_{i}\",\nlocal = 1\n",
                tool("x")
            )
            .into_bytes(),
            4 => b"registry.register{ name = \"bad\xff\" }\n".to_vec(),
            5 => format!(
                "registry.register{{ name = 'deep', x = {}{} }}\n",
                "{".repeat(250),
                "}".repeat(250)
            )
            .into_bytes(),
            6 => format!("{}error(\"boom {i}\")\n", tool(&format!("raises_{i}"))).into_bytes(),
            7 => tool("tool_0").into_bytes(),
            8 => format!(
                "registry.register{{ name = \"bad_schema_{i}\", toolset = \"t\",\n  \
                 schema = {{ parameters = {{ type = 5 }} }},\n  handler = function() end }}\n"
            )
            .into_bytes(),
            _ => tool(&format!("locked_{i}")).into_bytes(),
        };
        std::fs::write(&file, bytes).unwrap();
        if i % 10 == 9 {
            // Unreadable to anyone but root (the suite may run as root: then it loads).
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).unwrap();
        }
    }
    std::fs::write(tools.join("pkg/tool.lua"), tool("packaged")).unwrap();
    std::os::unix::fs::symlink(tools.join("nowhere.lua"), tools.join("dangling.lua")).unwrap();
    tools
}

/// A host over `tools` with an empty (cold) cache in `cache`, on one VM.
fn builder(tools: &Path, cache: &Path) -> HostBuilder {
    builder_on(tools, cache, 1)
}

/// [`builder`] on `vms` VMs.
fn builder_on(tools: &Path, cache: &Path, vms: usize) -> HostBuilder {
    Host::builder()
        .default_config()
        .library(false)
        .memory_store()
        .tools_dir(tools)
        .cache_dir(cache)
        .vms(vms)
}

std::thread_local! {
    /// The warnings logged on this thread while it captures them.
    static CAPTURED: std::cell::RefCell<Option<Vec<String>>> = const { std::cell::RefCell::new(None) };
}

/// The process-wide subscriber of these tests: it keeps the WARN (and ERROR) events of the
/// threads that capture them. Global, not scoped: a scoped subscriber can miss events
/// when another test's scoped subscriber comes or goes (tracing caches each call site's
/// interest for all threads).
struct Warnings;

/// The `message` field of an event.
struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl tracing::Subscriber for Warnings {
    fn register_callsite(
        &self,
        _: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        *metadata.level() <= tracing::Level::WARN
            && CAPTURED.with(|captured| captured.borrow().is_some())
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut message = Message(String::new());
        event.record(&mut message);
        let line = format!("{}: {}", event.metadata().target(), message.0);
        CAPTURED.with(|captured| {
            if let Some(lines) = captured.borrow_mut().as_mut() {
                lines.push(line);
            }
        });
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// Builds the host, returning it with the warnings its build logged on this thread.
fn build_logged(builder: HostBuilder) -> (Host, Vec<String>) {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        tracing::subscriber::set_global_default(Warnings).expect("no other global subscriber");
    });
    CAPTURED.with(|captured| *captured.borrow_mut() = Some(Vec::new()));
    let host = builder.build();
    let logged = CAPTURED.with(|captured| captured.borrow_mut().take().unwrap_or_default());
    (host.unwrap(), logged)
}

/// Everything a host says about its files and tools, one line each.
fn described(host: &Host) -> Vec<String> {
    let mut lines: Vec<String> = host
        .discovery()
        .iter()
        .map(|v| {
            format!(
                "{} {:?} registers={} cached={} last_good={} tools={:?} error={:?}",
                v.shown,
                v.reason,
                v.registers,
                v.cached,
                v.last_good,
                v.tools,
                v.error.as_ref().map(ToString::to_string)
            )
        })
        .collect();
    lines.extend(
        host.tools(None)
            .iter()
            .map(|t| format!("tool {} from {:?}:{:?}", t.name, t.file, t.line)),
    );
    lines
}

/// The files a build wrote into its cache directory, with their text. The registration
/// cache's schemas follow its index in no fixed order: each record gets its schema's text
/// in place of where the text is.
fn cache_files(cache: &Path) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(cache)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().is_file())
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(e.path()).unwrap();
            let text = match name.as_str() {
                "registrations.cache" => schemas_in_place(&text),
                _ => text,
            };
            (name, text)
        })
        .collect();
    files.sort();
    files
}

/// The registration cache's index with each record's schema text where its offsets were.
fn schemas_in_place(text: &str) -> String {
    let (index, schemas) = text.split_once('\n').unwrap();
    let mut index: serde_json::Value = serde_json::from_str(index).unwrap();
    for file in index["files"].as_object_mut().unwrap().values_mut() {
        for tool in file["tools"].as_array_mut().unwrap() {
            let place = &tool["schema"];
            let (start, end) = (place[0].as_u64().unwrap(), place[1].as_u64().unwrap());
            tool["schema"] = schemas[start as usize..end as usize].into();
        }
    }
    index.to_string()
}

#[test]
fn loading_while_judging_builds_the_host_judging_first_builds() {
    let root = tempfile::tempdir().unwrap();
    let tools = mixed_dir(root.path(), 200);
    let (streamed_cache, judged_cache) = (root.path().join("c1"), root.path().join("c2"));
    let (streamed, streamed_log) = build_logged(builder(&tools, &streamed_cache));
    let (judged, judged_log) = build_logged(builder(&tools, &judged_cache).judge_first());
    assert_eq!(described(&streamed), described(&judged));
    assert_eq!(streamed_log, judged_log);
    // The mix holds what it should: every kind of verdict, errors from judging and loading.
    let reasons: std::collections::BTreeSet<String> = streamed
        .discovery()
        .iter()
        .map(|v| format!("{:?}", v.reason))
        .collect();
    for reason in [
        "Registers",
        "Prefilter",
        "NoTopLevelRegister",
        "ParseError",
        "Skipped",
    ] {
        assert!(
            reasons.contains(reason),
            "{reason} missing from {reasons:?}"
        );
    }
    assert!(
        streamed_log.iter().any(|l| l.contains("boom 6")),
        "{streamed_log:?}"
    );
    assert!(
        streamed_log.iter().any(|l| l.contains("f007.lua")),
        "{streamed_log:?}"
    );
    assert!(streamed.tools(None).iter().any(|t| t.name == "packaged"));
    assert_eq!(cache_files(&streamed_cache), cache_files(&judged_cache));
}

#[test]
fn replicas_loading_while_judging_agree_with_judging_first() {
    let root = tempfile::tempdir().unwrap();
    let tools = mixed_dir(root.path(), 60);
    let (streamed_cache, judged_cache) = (root.path().join("c1"), root.path().join("c2"));
    let (streamed, streamed_log) = build_logged(builder_on(&tools, &streamed_cache, 3));
    let (judged, judged_log) = build_logged(builder_on(&tools, &judged_cache, 3).judge_first());
    assert_eq!(described(&streamed), described(&judged));
    // A replica that registered differently would say so here.
    assert_eq!(streamed_log, judged_log);
    assert!(
        !streamed_log.iter().any(|l| l.contains("another VM")),
        "{streamed_log:?}"
    );
    assert_eq!(cache_files(&streamed_cache), cache_files(&judged_cache));
    // Every tool answers on whichever VM a parallel batch gives it.
    let names: Vec<String> = streamed.tools(None).into_iter().map(|t| t.name).collect();
    let calls: Vec<super::FunctionCall> = (0..4)
        .flat_map(|_| names.iter())
        .map(|name| super::FunctionCall {
            name: name.clone(),
            args: serde_json::json!({}),
            tool_call_id: None,
        })
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ctx = crate::registry::CallContext::default();
    let results = runtime.block_on(streamed.handle_function_calls(calls, &ctx));
    assert_eq!(results.len(), 4 * names.len());
    assert!(names.len() > 10, "{names:?}");
    for (result, name) in results.iter().zip((0..4).flat_map(|_| names.iter())) {
        assert_eq!(result.to_string(), *name, "{result:?}");
    }
}

#[test]
fn a_file_that_fails_to_parse_late_leaves_the_earlier_files_loaded() {
    let root = tempfile::tempdir().unwrap();
    let tools = root.path().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    for i in 0..60 {
        std::fs::write(
            tools.join(format!("a{i:02}.lua")),
            tool(&format!("early_{i}")),
        )
        .unwrap();
    }
    std::fs::write(
        tools.join("z_late.lua"),
        format!("{}registry.register{{ name = ", tool("late")),
    )
    .unwrap();
    let (host, logged) = build_logged(builder(&tools, &root.path().join("cache")));
    let names: Vec<String> = host.tools(None).into_iter().map(|t| t.name).collect();
    assert_eq!(names.len(), 60, "{names:?}");
    assert!(!names.iter().any(|n| n == "late"));
    let late = host
        .discovery()
        .into_iter()
        .find(|v| v.shown.ends_with("z_late.lua"))
        .unwrap();
    assert_eq!(late.reason, Reason::ParseError);
    let error = late.error.unwrap().to_string();
    assert!(error.contains("z_late.lua:4"), "{error}");
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert!(logged[0].contains("z_late.lua:4"), "{logged:?}");
}

#[test]
fn a_parser_panic_is_a_parse_error_of_that_file_only() {
    let root = tempfile::tempdir().unwrap();
    let tools = root.path().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    for i in 0..30 {
        let mut text = tool(&format!("t{i:02}"));
        if i == 14 {
            text.push_str(PARSE_PANIC_MARKER);
        }
        std::fs::write(tools.join(format!("f{i:02}.lua")), text).unwrap();
    }
    let cache = root.path().join("cache");
    for start in ["cold", "warm"] {
        let host = builder(&tools, &cache).build().unwrap();
        let names: Vec<String> = host.tools(None).into_iter().map(|t| t.name).collect();
        assert_eq!(names.len(), 29, "{start}: {names:?}");
        assert!(!names.iter().any(|n| n == "t14"), "{start}");
        let failed = host
            .discovery()
            .into_iter()
            .find(|v| v.shown.ends_with("f14.lua"))
            .unwrap();
        // Not remembered as "does not register": the next start judges it again.
        assert_eq!(failed.reason, Reason::ParseError, "{start}");
        assert!(!failed.cached, "{start}");
        let error = failed.error.unwrap().to_string();
        assert!(error.contains("the Lua parser failed"), "{start}: {error}");
    }
}

#[test]
fn a_corrupt_verdict_cache_streams_like_no_cache() {
    let root = tempfile::tempdir().unwrap();
    let tools = mixed_dir(root.path(), 40);
    let (clean, corrupt) = (root.path().join("clean"), root.path().join("corrupt"));
    std::fs::create_dir_all(&corrupt).unwrap();
    std::fs::write(corrupt.join("discovery.json"), b"{\"/x\": [1, 2, tr").unwrap();
    let fresh = builder(&tools, &clean).build().unwrap();
    let recovered = builder(&tools, &corrupt).build().unwrap();
    assert_eq!(described(&fresh), described(&recovered));
    assert_eq!(cache_files(&clean), cache_files(&corrupt));
}

#[test]
fn a_file_edited_after_a_streamed_start_is_judged_again() {
    let root = tempfile::tempdir().unwrap();
    let tools = root.path().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(tools.join("a.lua"), tool("first")).unwrap();
    std::fs::write(tools.join("b.lua"), b"return {}\n").unwrap();
    let cache = root.path().join("cache");
    let cold = builder(&tools, &cache).build().unwrap();
    assert_eq!(cold.tools(None).len(), 1);
    drop(cold);
    // A different size changes the stamp, whatever the clock's resolution.
    std::fs::write(tools.join("a.lua"), b"return 1 -- no longer a tool\n").unwrap();
    std::fs::write(tools.join("b.lua"), tool("second_tool")).unwrap();
    let warm = builder(&tools, &cache).build().unwrap();
    let names: Vec<String> = warm.tools(None).into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["second_tool"]);
    let fresh = builder(&tools, &root.path().join("fresh")).build().unwrap();
    assert_eq!(described(&warm), described(&fresh));
}
