//! Input requests from Lua (`ctx.ask`, `ctx.roots`, `ctx.sample`, `ctx.all`) without an MCP
//! client: what a call without an asker gets, an embedder's asker
//! (`CallContext::with_asker`), `needs`, request keys, `toolhost call --answers` and
//! `t.answer` in `toolhost test`.

mod common;

use common::{Fixture, call, call_in};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::sync::Arc;
use toolhost::{AskFuture, Asker, CallContext, Capability, InputAnswer, InputKind, InputRequest};

/// A tool asking one question and answering with what came back.
const GREET: &str = r#"registry.register{ name = "greet", toolset = "t",
  schema = { description = "Greets", parameters = { type = "object" } },
  handler = function(args, ctx)
    local r = ctx.ask{ message = "Your name?", schema = { properties = { name = { type = "string" } }, required = { "name" } } }
    if r.action ~= "accept" then return "no name: " .. r.action end
    return "Hello, " .. r.content.name
  end }
"#;

/// Records every round it is asked and answers every question with `answer`.
struct Recorder {
    rounds: Mutex<Vec<Vec<InputRequest>>>,
    answer: InputAnswer,
    supports: bool,
}

impl Recorder {
    fn new(answer: InputAnswer) -> Arc<Self> {
        Arc::new(Self {
            rounds: Mutex::new(Vec::new()),
            answer,
            supports: true,
        })
    }

    fn keys(&self) -> Vec<Vec<String>> {
        self.rounds
            .lock()
            .iter()
            .map(|round| round.iter().map(|r| r.key.clone()).collect())
            .collect()
    }
}

impl Asker for Recorder {
    fn ask(&self, request: InputRequest) -> AskFuture<'_> {
        self.rounds.lock().push(vec![request]);
        let answer = self.answer.clone();
        Box::pin(async move { answer })
    }

    fn ask_round(&self, requests: Vec<InputRequest>) -> AskFuture<'_, Vec<InputAnswer>> {
        let answers = vec![self.answer.clone(); requests.len()];
        self.rounds.lock().push(requests);
        Box::pin(async move { answers })
    }

    fn supports(&self, _capability: Capability) -> bool {
        self.supports
    }
}

fn accept(content: Value) -> InputAnswer {
    serde_json::from_value(json!({"action": "accept", "content": content})).unwrap()
}

#[test]
fn without_an_asker_ask_answers_cancel() {
    let fx = Fixture::new();
    fx.tool("greet.lua", GREET);
    assert_eq!(
        call(&fx.host(), "greet", json!({})),
        json!("no name: cancel")
    );
}

#[test]
fn without_an_asker_roots_are_empty() {
    let fx = Fixture::new();
    fx.tool(
        "roots.lua",
        r#"registry.register{ name = "count_roots", toolset = "t",
  schema = { description = "d", parameters = { type = "object" } },
  handler = function(args, ctx) return tostring(#ctx.roots()) end }"#,
    );
    assert_eq!(call(&fx.host(), "count_roots", json!({})), json!("0"));
}

#[test]
fn without_an_asker_sample_raises_saying_why() {
    let fx = Fixture::new();
    fx.tool(
        "sample.lua",
        r#"registry.register{ name = "complete", toolset = "t",
  schema = { description = "d", parameters = { type = "object" } },
  handler = function(args, ctx)
    return ctx.sample{ messages = { { role = "user", content = "hi" } }, max_tokens = 5 }.content
  end }"#,
    );
    let result = call(&fx.host(), "complete", json!({}));
    assert_eq!(result["error_type"], "handler_error", "{result}");
    let message = result["error"].as_str().unwrap();
    assert!(
        message.contains("ctx.sample: nobody can answer it here"),
        "{message}"
    );
    assert!(message.contains("sample.lua:4"), "{message}");
}

#[test]
fn an_embedders_asker_gets_the_request_and_its_answer_reaches_the_handler() {
    let fx = Fixture::new();
    fx.tool("greet.lua", GREET);
    let asker = Recorder::new(accept(json!({"name": "Ada"})));
    let ctx = CallContext::default().with_asker(asker.clone());
    assert_eq!(
        call_in(&fx.host(), "greet", json!({}), &ctx),
        json!("Hello, Ada")
    );
    let rounds = asker.rounds.lock();
    let request = &rounds[0][0];
    assert_eq!(request.key, "q1");
    let InputKind::Elicitation { message, schema } = &request.kind else {
        panic!("{request:?}");
    };
    assert_eq!(message, "Your name?");
    assert_eq!(schema["type"], "object", "the object type is filled in");
    assert_eq!(schema["required"], json!(["name"]));
}

#[test]
fn ctx_all_asks_its_functions_requests_together_and_returns_results_in_order() {
    let fx = Fixture::new();
    fx.tool(
        "pair.lua",
        r#"registry.register{ name = "pair", toolset = "t",
  schema = { description = "d", parameters = { type = "object" } },
  handler = function(args, ctx)
    local form = { properties = { v = { type = "string" } } }
    local a, b, c = ctx.all(
      function() return ctx.ask{ message = "A?", schema = form }.content.v .. "1" end,
      function() return "plain" end,
      function()
        local first = ctx.ask{ key = "bee", message = "B?", schema = form }
        local second = ctx.ask{ message = "B again?", schema = form }
        return first.content.v .. second.content.v
      end)
    return a .. "," .. b .. "," .. c
  end }"#,
    );
    let asker = Recorder::new(accept(json!({"v": "x"})));
    let ctx = CallContext::default().with_asker(asker.clone());
    assert_eq!(
        call_in(&fx.host(), "pair", json!({}), &ctx),
        json!("x1,plain,xx")
    );
    // Round one: both first questions at once; round two: the third function's second.
    assert_eq!(
        asker.keys(),
        vec![vec!["q1.1.1", "bee"], vec!["q1.3.2"]],
        "{:?}",
        asker.rounds.lock()
    );
}

#[test]
fn ctx_all_functions_may_await_other_host_functions() {
    let fx = Fixture::new();
    fx.tool(
        "relay.lua",
        r#"registry.register{ name = "echo", toolset = "t",
  schema = { description = "d", parameters = { type = "object" } },
  handler = function(args) return "echo:" .. args.v end }
registry.register{ name = "relay", toolset = "t",
  schema = { description = "d", parameters = { type = "object" } },
  handler = function(args, ctx)
    local a, b = ctx.all(
      function() return ctx.call("echo", { v = "a" }) end,
      function() return ctx.call("echo", { v = "b" }) end)
    return a .. "+" .. b
  end }"#,
    );
    assert_eq!(call(&fx.host(), "relay", json!({})), json!("echo:a+echo:b"));
}

#[test]
fn the_first_error_in_ctx_all_is_raised_and_ends_the_others() {
    let fx = Fixture::new();
    fx.tool(
        "fails.lua",
        r#"registry.register{ name = "fails", toolset = "t",
  schema = { description = "d", parameters = { type = "object" } },
  handler = function(args, ctx)
    local ok, e = pcall(ctx.all,
      function() ctx.ask{ message = "A?", schema = {} } return "never" end,
      function() error("second broke") end)
    return tostring(ok) .. ":" .. tostring(e)
  end }"#,
    );
    let result = call(&fx.host(), "fails", json!({}));
    let text = result.as_str().unwrap_or_default();
    assert!(text.starts_with("false:"), "{result}");
    assert!(text.contains("second broke"), "{result}");
}

#[test]
fn a_nested_calls_requests_have_prefixed_keys() {
    let fx = Fixture::new();
    fx.tool("greet.lua", GREET);
    fx.tool(
        "outer.lua",
        r#"registry.register{ name = "outer", toolset = "t",
  schema = { description = "d", parameters = { type = "object" } },
  handler = function(args, ctx)
    ctx.ask{ message = "First?", schema = {} }
    return ctx.call("greet", {})
  end }"#,
    );
    let asker = Recorder::new(accept(json!({"name": "Ada"})));
    let ctx = CallContext::default().with_asker(asker.clone());
    assert_eq!(
        call_in(&fx.host(), "outer", json!({}), &ctx),
        json!("Hello, Ada")
    );
    assert_eq!(asker.keys(), vec![vec!["q1"], vec!["c1.q1"]]);
}

#[test]
fn a_key_used_twice_in_one_call_is_refused() {
    let fx = Fixture::new();
    fx.tool(
        "twice.lua",
        r#"registry.register{ name = "twice", toolset = "t",
  schema = { description = "d", parameters = { type = "object" } },
  handler = function(args, ctx)
    ctx.ask{ key = "k", message = "1?", schema = {} }
    ctx.ask{ key = "k", message = "2?", schema = {} }
  end }"#,
    );
    let ctx = CallContext::default().with_asker(Recorder::new(InputAnswer::Decline));
    let result = call_in(&fx.host(), "twice", json!({}), &ctx);
    let message = result["error"].as_str().unwrap_or_default();
    assert!(message.contains("the key 'k' is already used"), "{result}");
    assert!(message.contains("twice.lua:5"), "{result}");
}

#[test]
fn a_form_that_is_not_flat_is_refused_naming_the_field() {
    let fx = Fixture::new();
    fx.tool(
        "nested.lua",
        r#"registry.register{ name = "nested", toolset = "t",
  schema = { description = "d", parameters = { type = "object" } },
  handler = function(args, ctx)
    local answer = ctx.ask{ message = "Where?", schema = { properties = { address = { type = "object" } } } }
    return answer.action
  end }"#,
    );
    let result = call(&fx.host(), "nested", json!({}));
    let message = result["error"].as_str().unwrap_or_default();
    assert!(
        message.contains("ctx.ask: 'schema.properties.address'"),
        "{result}"
    );
    assert!(message.contains("nested.lua:4"), "{result}");
}

#[test]
fn ask_outside_the_handler_thread_is_refused() {
    let fx = Fixture::new();
    fx.tool(
        "inside.lua",
        r#"registry.register{ name = "inside", toolset = "t",
  schema = { description = "d", parameters = { type = "object" } },
  handler = function(args, ctx)
    local co = coroutine.create(function() return ctx.ask{ message = "?", schema = {} } end)
    local ok, e = coroutine.resume(co)
    return tostring(ok) .. ":" .. tostring(e)
  end }"#,
    );
    let result = call(&fx.host(), "inside", json!({}));
    let text = result.as_str().unwrap_or_default();
    assert!(
        text.starts_with("false:")
            && text.contains("ctx.ask can only be called from the tool handler"),
        "{result}"
    );
}

#[test]
fn an_unknown_capability_in_needs_is_a_load_error_naming_it() {
    let fx = Fixture::new();
    fx.tool(
        "bad.lua",
        r#"registry.register{ name = "bad", toolset = "t", needs = { "telepathy" },
  schema = { description = "d", parameters = { type = "object" } },
  handler = function() return "x" end }"#,
    );
    let error = common::error_of(&fx.host(), "bad.lua");
    assert!(error.contains("unknown capability 'telepathy'"), "{error}");
    assert!(error.contains("elicitation, sampling, roots"), "{error}");
}

#[test]
fn a_tool_needing_what_the_asker_lacks_is_refused_before_it_runs() {
    let fx = Fixture::new();
    let marker = fx.root().join("ran.txt");
    fx.tool(
        "needy.lua",
        &format!(
            r#"registry.register{{ name = "needy", toolset = "t", needs = {{ "sampling", "elicitation" }},
  schema = {{ description = "d", parameters = {{ type = "object" }} }},
  handler = function() fs.write({:?}, "ran") return "ran" end }}"#,
            marker.display().to_string()
        ),
    );
    let asker = Arc::new(Recorder {
        rounds: Mutex::new(Vec::new()),
        answer: InputAnswer::Cancel,
        supports: false,
    });
    let ctx = CallContext::default().with_asker(asker);
    let result = call_in(&fx.host(), "needy", json!({}), &ctx);
    assert_eq!(result["error_type"], "missing_capability", "{result}");
    assert_eq!(
        result["needs"],
        json!(["elicitation", "sampling"]),
        "{result}"
    );
    assert!(!marker.exists(), "the handler ran");
}

#[test]
fn call_answers_a_file_in_order_and_by_key() {
    let fx = Fixture::new();
    fx.tool("greet.lua", GREET);
    fx.write(
        "in-order.json",
        r#"[{"action": "accept", "content": {"name": "Ada"}}]"#,
    );
    fx.write("by-key.json", r#"{"q1": {"action": "decline"}}"#);
    let run = |file: &str| {
        let out = fx
            .toolhost()
            .args(["call", "greet", "{}", "--answers", file])
            .assert()
            .success()
            .get_output()
            .clone();
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(run("in-order.json").trim(), "Hello, Ada");
    assert_eq!(run("by-key.json").trim(), "no name: decline");
}

#[test]
fn a_bad_answers_file_is_a_usage_error_naming_the_answer() {
    let fx = Fixture::new();
    fx.tool("greet.lua", GREET);
    fx.write("bad.json", r#"[{"action": "cancel"}, {"action": "maybe"}]"#);
    let out = fx
        .toolhost()
        .args(["call", "greet", "{}", "--answers", "bad.json"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--answers bad.json: answer #2"), "{stderr}");
    assert!(stderr.contains("unknown variant `maybe`"), "{stderr}");
}

#[test]
fn lua_tests_script_answers_with_t_answer() {
    let fx = Fixture::new();
    fx.tool("greet.lua", GREET);
    fx.tool(
        "greet_test.lua",
        r#"test("accepts", function(t)
  t.answer{ { action = "accept", content = { name = "Ada" } } }
  t.eq(t.call("greet", {}), "Hello, Ada")
end)
test("by key", function(t)
  t.answer{ q1 = { action = "decline" } }
  t.eq(t.call("greet", {}), "no name: decline")
end)
test("without answers", function(t)
  t.eq(t.call("greet", {}), "no name: cancel")
end)
test("a bad answer names itself", function(t)
  local ok, e = pcall(t.answer, { { action = "maybe" } })
  t.eq(ok, false)
  t.match(e, "t.answer: answer #1")
end)
"#,
    );
    fx.toolhost().arg("test").assert().success();
}

#[test]
fn an_answer_that_does_not_match_the_form_raises() {
    let fx = Fixture::new();
    fx.tool("greet.lua", GREET);
    let hostile = Recorder::new(accept(json!({"name": {"nested": ["not", "a", "string"]}})));
    let ctx = CallContext::default().with_asker(hostile);
    let result = call_in(&fx.host(), "greet", json!({}), &ctx);
    let message = result["error"].as_str().unwrap_or_default();
    assert!(
        message.contains("ctx.ask: the client's answer does not match the form: content.name"),
        "{result}"
    );
    assert!(message.contains("greet.lua:4"), "{result}");
}

#[test]
fn a_runaway_function_inside_ctx_all_meets_the_deadline() {
    let fx = Fixture::new();
    fx.tool(
        "spin.lua",
        r#"registry.register{ name = "spin", toolset = "t", timeout_ms = 300,
  schema = { description = "d", parameters = { type = "object" } },
  handler = function(args, ctx)
    return ctx.all(
      function() return "fine" end,
      function() while true do pcall(function() while true do end end) end end)
  end }
registry.register{ name = "after", toolset = "t",
  schema = { description = "d", parameters = { type = "object" } },
  handler = function() return "still serving" end }"#,
    );
    let host = fx.host();
    let result = call(&host, "spin", json!({}));
    assert_eq!(result["error_type"], "timeout", "{result}");
    assert_eq!(call(&host, "after", json!({})), json!("still serving"));
}

#[test]
fn a_function_yielding_inside_ctx_all_does_not_confuse_it() {
    let fx = Fixture::new();
    fx.tool(
        "yields.lua",
        r#"registry.register{ name = "yields", toolset = "t",
  schema = { description = "d", parameters = { type = "object" } },
  handler = function(args, ctx)
    local a, b = ctx.all(
      function() coroutine.yield("stray") return "a" end,
      function()
        local co = coroutine.wrap(function() coroutine.yield(1) return 2 end)
        return "b" .. co() .. co()
      end)
    return a .. b
  end }"#,
    );
    assert_eq!(call(&fx.host(), "yields", json!({})), json!("ab12"));
}
