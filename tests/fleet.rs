//! A fleet of `toolhost serve --http` replicas sharing one store and one state key behind
//! a round-robin proxy (tests/common/fleet.rs; docs/fleet.md): concurrent `store.update`
//! increments spread over the replicas lose nothing and count nothing twice, even with a
//! replica SIGKILLed mid-burst; a task started through one replica is read, answered and
//! cancelled through another; a sealed 2026-07-28 input-request round continues on another
//! replica. Every scenario runs twice: on one SQLite file the replicas share, and on one
//! PostgreSQL database (`sqlite::…`, `postgres::…`); and PostgreSQL restarted under a
//! burst fails calls cleanly while it is down and loses no acknowledged increment.

mod common;

use common::Fixture;
use common::fleet::{Backend, Fleet, Mode, Proxy, request, result};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

const TASKS: &str = "io.modelcontextprotocol/tasks";
const CLIENTS: usize = 16;
const CALLS_EACH: usize = 200;
/// A liveness bound for what the tests wait on (never a timing assertion).
const LIVENESS: Duration = Duration::from_secs(60);

const TOOLS: &str = r#"
registry.register{ name = "bump", toolset = "t",
  schema = { description = "Adds one to the shared count, answers the new count",
    parameters = { type = "object", properties = {} } },
  handler = function()
    return tostring(store.update("count", function(n) return (n or 0) + 1 end))
  end }
registry.register{ name = "hello", toolset = "t",
  schema = { description = "Answers without the store", parameters = { type = "object", properties = {} } },
  handler = function() return "hello" end }
registry.register{ name = "count", toolset = "t",
  schema = { description = "The shared count", parameters = { type = "object", properties = {} } },
  handler = function() return tostring(store.get("count") or 0) end }
registry.register{ name = "late_marker", toolset = "t", task = "required", timeout_ms = 60000,
  schema = { description = "Writes a marker after a while", parameters = { type = "object" } },
  handler = function() time.sleep(20000) fs.write("marker.txt", "written") return "done" end }
registry.register{ name = "halfway", toolset = "t", task = "required", timeout_ms = 60000,
  schema = { description = "Reports progress, then waits", parameters = { type = "object" } },
  handler = function(_, ctx) ctx.progress(1, 2, "halfway") time.sleep(20000) return "done" end }
registry.register{ name = "confirm", toolset = "t", task = "optional", timeout_ms = 60000,
  schema = { description = "Asks, then answers", parameters = { type = "object",
    properties = { file = { type = "string" } } } },
  handler = function(args, ctx)
    local answer = ctx.ask{ message = "Delete " .. args.file .. "?",
      schema = { type = "object", properties = { confirm = { type = "boolean" } } } }
    if answer.action == "accept" and answer.content.confirm then
      return "deleted " .. args.file
    end
    return answer.action .. " " .. args.file
  end }
registry.register{ name = "greet", toolset = "t",
  schema = { description = "Asks a name, greets it", parameters = { type = "object" } },
  handler = function(_, ctx)
    local answer = ctx.ask{ key = "who", message = "Your name?",
      schema = { type = "object", properties = { name = { type = "string" } } } }
    return "Hello, " .. (answer.content and answer.content.name or "nobody")
  end }
"#;

/// Every scenario runs on every store backend the fleet may share: one module of tests per
/// backend, named after the scenarios (`sqlite::…`). A shared PostgreSQL database is one
/// more entry in the list: `postgres => super::Backend::postgres()`.
macro_rules! scenarios {
    ([$($backend:ident => $make:expr),* $(,)?] $scenarios:tt) => {
        $( scenarios!(@backend $backend, $make, $scenarios); )*
    };
    (@backend $backend:ident, $make:expr, [$($scenario:ident),* $(,)?]) => {
        mod $backend {
            $(
                #[test]
                fn $scenario() {
                    super::$scenario(&$make)
                }
            )*
        }
    };
}

scenarios!(
    [sqlite => super::Backend::Sqlite, postgres => super::Backend::postgres()]
    [
        sixteen_clients_bumping_through_three_replicas_count_exactly_3200,
        a_replica_killed_mid_burst_loses_no_acknowledged_increment_and_counts_none_twice,
        a_task_created_via_one_replica_is_polled_and_cancelled_via_another_and_its_handler_stops,
        a_tasks_input_round_is_answered_through_another_replica,
        responses_for_unasked_keys_via_another_replica_are_ignored_and_a_late_update_is_refused,
        a_sealed_input_request_round_started_on_one_stateless_replica_is_answered_on_another,
        a_sealed_input_request_round_continues_on_another_replica_with_sessions_for_2026_clients,
        a_replica_with_another_state_key_refuses_the_fleets_sealed_round,
        an_oversized_response_via_another_replica_is_refused_and_the_task_keeps_waiting,
        a_tasks_progress_shows_through_another_replica,
        a_2025_session_opened_on_one_replica_is_unknown_to_another,
        the_official_python_client_runs_a_multi_round_call_and_bumps_across_replicas,
    ]
);

fn fixture() -> Fixture {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    fx
}

fn fleet(fx: &Fixture, backend: &Backend, mode: Mode, count: usize) -> Fleet {
    Fleet::start(fx, backend, mode, count, "[runtime]\nvms = 2\n")
}

/// What a client declares: elicitation and the Tasks extension.
fn asking() -> Value {
    json!({ "elicitation": {}, "extensions": { TASKS: {} } })
}

fn call(name: &str, arguments: Value) -> Value {
    json!({ "name": name, "arguments": arguments })
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// One `bump` through `authority`: the new count, or why there is none.
fn bump(authority: &str) -> Result<u64, String> {
    let answer = request(authority, "tools/call", call("bump", json!({})), json!({}))?;
    let result = answer
        .get("result")
        .ok_or_else(|| format!("no result: {answer}"))?;
    if result["isError"] == true {
        return Err(format!("a tool error: {result}"));
    }
    text(result)
        .parse()
        .map_err(|_| format!("not a count: {result}"))
}

/// `tasks/get` through `authority` until `done` holds of the task (within [`LIVENESS`]).
fn until(authority: &str, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let task = result(authority, "tasks/get", json!({ "taskId": id }), asking());
        if done(&task) {
            return task;
        }
        assert!(start.elapsed() < LIVENESS, "never {what}: {task}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What the burst's clients saw.
#[derive(Default)]
struct Burst {
    acknowledged: Vec<u64>,
    failed: usize,
}

/// 16 clients × 200 `bump`s through `proxy`; `on_ack(n)` runs after the n-th
/// acknowledgement of the whole burst.
fn burst(proxy: &str, on_ack: impl Fn(usize) + Send + Sync) -> Burst {
    let seen = Mutex::new(Burst::default());
    let acks = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..CLIENTS {
            scope.spawn(|| {
                for _ in 0..CALLS_EACH {
                    let outcome = bump(proxy);
                    let mut seen = seen.lock().unwrap();
                    match outcome {
                        Ok(count) => {
                            seen.acknowledged.push(count);
                            drop(seen);
                            on_ack(acks.fetch_add(1, Ordering::SeqCst) + 1);
                        }
                        Err(_) => seen.failed += 1,
                    }
                }
            });
        }
    });
    seen.into_inner().unwrap()
}

fn final_count(authority: &str) -> u64 {
    let counted = result(authority, "tools/call", call("count", json!({})), json!({}));
    text(&counted).parse().expect("a count")
}

fn sixteen_clients_bumping_through_three_replicas_count_exactly_3200(backend: &Backend) {
    let fx = fixture();
    let fleet = fleet(&fx, backend, Mode::Stateless, 3);
    let proxy = Proxy::start(fleet.authorities());
    let seen = burst(&proxy.authority, |_| {});
    assert_eq!(seen.failed, 0, "no call may fail with every replica up");
    let distinct: BTreeSet<u64> = seen.acknowledged.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        CLIENTS * CALLS_EACH,
        "a count was answered twice"
    );
    assert_eq!(final_count(&proxy.authority), 3_200);
    let served = proxy.served();
    assert!(served.iter().all(|&n| n > 0), "not spread: {served:?}");
}

/// PostgreSQL (the restart cluster, :5433) stopped a third of the way into a burst over
/// three replicas: while it is down a store call fails with an error naming the server and
/// a tool without the store still answers; once it is back the replicas' pools reconnect by
/// themselves, and every acknowledged increment is there, none counted twice.
#[test]
fn postgres_restarted_mid_burst_fails_calls_cleanly_and_loses_no_acknowledged_increment() {
    let cluster = common::pg::RestartCluster::exclusive();
    let backend = Backend::Postgres(common::pg::TestDb::on(common::pg::RESTART_PORT));
    let fx = fixture();
    let fleet = fleet(&fx, &backend, Mode::Stateless, 3);
    let proxy = Proxy::start(fleet.authorities());
    let (outage_send, outage) = mpsc::channel();
    let seen = burst(&proxy.authority, |acks| {
        if acks != CLIENTS * CALLS_EACH / 3 {
            return;
        }
        cluster.stop();
        // The outage as a client sees it (this client's next calls, and everyone else's,
        // fail the same way until the server is back).
        let failure = bump(&proxy.authority).expect_err("a store call with PostgreSQL down");
        let other = request(
            &proxy.authority,
            "tools/call",
            call("hello", json!({})),
            json!({}),
        )
        .expect("an answer");
        cluster.start();
        let _ = outage_send.send((failure, other));
    });
    let (failure, other) = outage.try_recv().expect("PostgreSQL was stopped mid-burst");
    assert!(
        failure.contains("127.0.0.1:5433"),
        "the error names the server: {failure}"
    );
    assert!(
        !failure.contains(common::pg::PASSWORD),
        "the error shows the password: {failure}"
    );
    assert_eq!(text(&other["result"]), "hello", "{other}");
    let acknowledged = seen.acknowledged.len() as u64;
    let distinct: BTreeSet<u64> = seen.acknowledged.iter().copied().collect();
    assert_eq!(
        distinct.len() as u64,
        acknowledged,
        "a count was answered twice"
    );
    // Calls succeed again after the outage: the burst's own later acknowledgements, and
    // the count read through the proxy.
    let total = final_count(&proxy.authority);
    assert!(
        total >= acknowledged,
        "acknowledged increments were lost: {total} < {acknowledged}"
    );
    assert!(
        total <= acknowledged + seen.failed as u64,
        "increments counted twice: {total} > {acknowledged} acknowledged + {} failed",
        seen.failed
    );
    assert!(
        acknowledged > (CLIENTS * CALLS_EACH / 3) as u64,
        "no call succeeded after PostgreSQL came back: {acknowledged} acknowledged"
    );
}

fn a_replica_killed_mid_burst_loses_no_acknowledged_increment_and_counts_none_twice(
    backend: &Backend,
) {
    let fx = fixture();
    let fleet = Arc::new(Mutex::new(fleet(&fx, backend, Mode::Stateless, 3)));
    let proxy = Proxy::start(fleet.lock().unwrap().authorities());
    let (killed_send, killed) = mpsc::channel();
    let seen = burst(&proxy.authority, |acks| {
        // A third of the way in, the second replica dies without a word.
        if acks == CLIENTS * CALLS_EACH / 3 {
            fleet.lock().unwrap().replicas[1].kill();
            let _ = killed_send.send(());
        }
    });
    killed.try_recv().expect("the replica was killed mid-burst");
    let acknowledged = seen.acknowledged.len() as u64;
    eprintln!(
        "burst with a kill: {acknowledged} acknowledged, {} failed, connections per replica {:?}",
        seen.failed,
        proxy.served()
    );
    // The two replicas left (the proxy skips the dead one) served the rest of the burst.
    assert!(
        seen.acknowledged.len() > CLIENTS * CALLS_EACH * 2 / 3,
        "the fleet stopped serving after the kill: {acknowledged} acknowledged, {} failed",
        seen.failed
    );
    let distinct: BTreeSet<u64> = seen.acknowledged.iter().copied().collect();
    assert_eq!(
        distinct.len() as u64,
        acknowledged,
        "a count was answered twice"
    );
    let total = final_count(&proxy.authority);
    assert!(
        total >= acknowledged,
        "acknowledged increments were lost: {total} < {acknowledged}"
    );
    assert!(
        total <= acknowledged + seen.failed as u64,
        "increments counted twice: {total} > {acknowledged} acknowledged + {} failed",
        seen.failed
    );
    assert!(
        distinct.iter().all(|&n| n >= 1 && n <= total),
        "an acknowledged count beyond the total {total}"
    );
}

/// Starts `name` as a task through `authority`; answers its id.
fn start_task(authority: &str, name: &str, arguments: Value) -> String {
    let created = result(authority, "tools/call", call(name, arguments), asking());
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().expect("a task id").to_string()
}

fn a_task_created_via_one_replica_is_polled_and_cancelled_via_another_and_its_handler_stops(
    backend: &Backend,
) {
    let fx = fixture();
    let fleet = fleet(&fx, backend, Mode::Stateless, 2);
    let (a, b) = (&fleet.replicas[0].authority, &fleet.replicas[1].authority);
    let id = start_task(a, "late_marker", json!({}));
    let polled = result(b, "tasks/get", json!({ "taskId": id }), asking());
    assert_eq!(polled["status"], "working", "{polled}");
    let ack = result(b, "tasks/cancel", json!({ "taskId": id }), asking());
    assert_eq!(ack.get("error"), None, "{ack}");
    // Replica A's watcher stops the handler, and A records that it has stopped.
    let stopped = until(b, &id, "stopped", |task| {
        task["statusMessage"]
            .as_str()
            .is_some_and(|m| m.contains("handler has stopped"))
    });
    assert_eq!(stopped["status"], "cancelled", "{stopped}");
    assert!(
        !fx.root().join("marker.txt").exists(),
        "the cancelled handler wrote its marker"
    );
    let via_a = result(a, "tasks/get", json!({ "taskId": id }), asking());
    assert_eq!(via_a["status"], "cancelled", "{via_a}");
}

fn confirm_update(id: &str, key: &str) -> Value {
    json!({ "taskId": id, "inputResponses": {
        key: { "action": "accept", "content": { "confirm": true } } } })
}

/// Starts `confirm` through `a` and waits, through `b`, until it asks; answers its id.
fn waiting_confirm(a: &str, b: &str) -> String {
    let id = start_task(a, "confirm", json!({ "file": "a.txt" }));
    let waiting = until(b, &id, "input_required", |task| {
        task["status"] == "input_required"
    });
    let question = &waiting["inputRequests"]["q1"];
    assert_eq!(question["method"], "elicitation/create", "{waiting}");
    assert_eq!(question["params"]["message"], "Delete a.txt?", "{waiting}");
    id
}

fn a_tasks_input_round_is_answered_through_another_replica(backend: &Backend) {
    let fx = fixture();
    let fleet = fleet(&fx, backend, Mode::Stateless, 2);
    let (a, b) = (&fleet.replicas[0].authority, &fleet.replicas[1].authority);
    let id = waiting_confirm(a, b);
    let ack = result(b, "tasks/update", confirm_update(&id, "q1"), asking());
    assert_eq!(ack["resultType"], "complete", "{ack}");
    let done = until(b, &id, "completed", |task| task["status"] == "completed");
    assert_eq!(text(&done["result"]), "deleted a.txt", "{done}");
}

fn responses_for_unasked_keys_via_another_replica_are_ignored_and_a_late_update_is_refused(
    backend: &Backend,
) {
    let fx = fixture();
    let fleet = fleet(&fx, backend, Mode::Stateless, 2);
    let (a, b) = (&fleet.replicas[0].authority, &fleet.replicas[1].authority);
    let id = waiting_confirm(a, b);
    result(
        b,
        "tasks/update",
        confirm_update(&id, "not-asked"),
        asking(),
    );
    let still = result(a, "tasks/get", json!({ "taskId": id }), asking());
    assert_eq!(still["status"], "input_required", "{still}");
    assert!(still["inputRequests"].get("q1").is_some(), "{still}");
    result(a, "tasks/update", confirm_update(&id, "q1"), asking());
    until(b, &id, "completed", |task| task["status"] == "completed");
    let late = request(b, "tasks/update", confirm_update(&id, "q1"), asking()).expect("answered");
    assert_eq!(late["error"]["code"], -32602, "{late}");
}

fn sealed_round_continues_on_another_replica(backend: &Backend, mode: Mode) {
    let fx = fixture();
    let fleet = fleet(&fx, backend, mode, 2);
    let (a, b) = (&fleet.replicas[0].authority, &fleet.replicas[1].authority);
    let first = result(a, "tools/call", call("greet", json!({})), asking());
    assert_eq!(first["resultType"], "input_required", "{first}");
    assert_eq!(
        first["inputRequests"]["who"]["method"], "elicitation/create",
        "{first}"
    );
    let state = first["requestState"].as_str().expect("a sealed state");
    let mut retry = call("greet", json!({}));
    retry["requestState"] = json!(state);
    retry["inputResponses"] =
        json!({ "who": { "action": "accept", "content": { "name": "Ada" } } });
    let done = result(b, "tools/call", retry, asking());
    assert_eq!(text(&done), "Hello, Ada", "{done}");
}

fn a_sealed_input_request_round_started_on_one_stateless_replica_is_answered_on_another(
    backend: &Backend,
) {
    sealed_round_continues_on_another_replica(backend, Mode::Stateless);
}

fn a_sealed_input_request_round_continues_on_another_replica_with_sessions_for_2026_clients(
    backend: &Backend,
) {
    sealed_round_continues_on_another_replica(backend, Mode::Sessions);
}

fn a_replica_with_another_state_key_refuses_the_fleets_sealed_round(backend: &Backend) {
    let fx = fixture();
    let fleet = fleet(&fx, backend, Mode::Stateless, 1);
    let stranger = Fleet::stranger(&fx, backend, Mode::Stateless);
    let first = result(
        &fleet.replicas[0].authority,
        "tools/call",
        call("greet", json!({})),
        asking(),
    );
    let mut retry = call("greet", json!({}));
    retry["requestState"] = first["requestState"].clone();
    retry["inputResponses"] =
        json!({ "who": { "action": "accept", "content": { "name": "Eve" } } });
    let refused = request(&stranger.authority, "tools/call", retry, asking()).expect("answered");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("state_key_env"), "{refused}");
}

fn an_oversized_response_via_another_replica_is_refused_and_the_task_keeps_waiting(
    backend: &Backend,
) {
    let fx = fixture();
    let fleet = fleet(&fx, backend, Mode::Stateless, 2);
    let (a, b) = (&fleet.replicas[0].authority, &fleet.replicas[1].authority);
    let id = waiting_confirm(a, b);
    // Over [store] max_value_bytes (1 MiB) once kept with the task, under the 4 MiB body cap.
    let huge = json!({ "taskId": id, "inputResponses": {
        "q1": { "action": "accept", "content": { "confirm": true, "pad": "x".repeat(1_500_000) } } } });
    let refused = request(b, "tasks/update", huge, asking()).expect("answered");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("max_value_bytes"), "{message}");
    let still = result(a, "tasks/get", json!({ "taskId": id }), asking());
    assert_eq!(still["status"], "input_required", "{still}");
    result(b, "tasks/update", confirm_update(&id, "q1"), asking());
    let done = until(a, &id, "completed", |task| task["status"] == "completed");
    assert_eq!(text(&done["result"]), "deleted a.txt", "{done}");
}

fn a_tasks_progress_shows_through_another_replica(backend: &Backend) {
    let fx = fixture();
    let fleet = fleet(&fx, backend, Mode::Stateless, 2);
    let (a, b) = (&fleet.replicas[0].authority, &fleet.replicas[1].authority);
    let id = start_task(a, "halfway", json!({}));
    let reported = until(b, &id, "showing its progress", |task| {
        task["statusMessage"] == "1/2: halfway"
    });
    assert_eq!(reported["status"], "working", "{reported}");
    result(b, "tasks/cancel", json!({ "taskId": id }), asking());
    until(b, &id, "stopped", |task| {
        task["statusMessage"]
            .as_str()
            .is_some_and(|m| m.contains("handler has stopped"))
    });
}

fn a_2025_session_opened_on_one_replica_is_unknown_to_another(backend: &Backend) {
    let fx = fixture();
    let fleet = fleet(&fx, backend, Mode::Sessions, 2);
    let (a, b) = (&fleet.replicas[0].authority, &fleet.replicas[1].authority);
    let session = common::raw_http::RawHttp::connect(a).open_session();
    // Why docs/fleet.md asks for affinity (or --stateless) for 2025-11-25 sessions.
    let elsewhere = common::raw_http::RawHttp::connect(b).mcp(
        Some(&session),
        &common::raw_http::tools_call(1, "count", "{}"),
    );
    assert_eq!(elsewhere.status, 404, "{}", elsewhere.text());
    let home = common::raw_http::RawHttp::connect(a).mcp(
        Some(&session),
        &common::raw_http::tools_call(2, "count", "{}"),
    );
    assert_eq!(home.status, 200, "{}", home.text());
}

fn the_official_python_client_runs_a_multi_round_call_and_bumps_across_replicas(backend: &Backend) {
    let fx = fixture();
    let fleet = fleet(&fx, backend, Mode::Stateless, 3);
    let proxy = Proxy::start(fleet.authorities());
    let url = format!("http://{}/mcp", proxy.authority);
    let steps = common::mcp_client::run_script("fleet.py", &[&url, "30"]);
    let asked = common::mcp_client::step(&steps, "asked");
    assert_eq!(asked["message"], "Your name?", "{asked}");
    let greet = common::mcp_client::step(&steps, "greet");
    assert_eq!(greet["text"], "Hello, Ada", "{greet}");
    assert_eq!(greet["error"], false, "{greet}");
    let counts = common::mcp_client::step(&steps, "bumps")["counts"].clone();
    let counts: Vec<u64> = serde_json::from_value(counts).expect("counts");
    assert_eq!(
        counts,
        (1..=30).collect::<Vec<u64>>(),
        "each bump counted once, in order"
    );
    let served = proxy.served();
    assert!(served.iter().all(|&n| n >= 10), "not spread: {served:?}");
}
