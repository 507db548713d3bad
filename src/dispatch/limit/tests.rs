//! The limiter on real stores: in process (memory) and shared (SQLite files).

use super::*;

fn config(text: &str) -> LimitsConfig {
    toml::from_str(text).expect("limits parse")
}

fn memory() -> Limiters {
    Limiters::new(Arc::new(StoreInner::memory(1 << 20)))
}

fn sqlite(path: &std::path::Path) -> Limiters {
    Limiters::new(Arc::new(StoreInner::sqlite(path.to_path_buf(), 1 << 20)))
}

/// Calls `tool` by `caller` until one is refused (at most `max`): the allowed count and
/// the refusal.
fn until_refused(
    limiters: &Limiters,
    config: &LimitsConfig,
    tool: &str,
    caller: &str,
    max: usize,
) -> (usize, Option<ToolError>) {
    for allowed in 0..max {
        if let Err(refusal) = limiters.check(config, tool, caller, &Wait::default()) {
            return (allowed, Some(*refusal));
        }
    }
    (max, None)
}

#[test]
fn a_burst_passes_then_the_call_is_refused_naming_the_limit_and_the_retry() {
    for limiters in [memory(), {
        let dir = tempfile::tempdir().unwrap();
        sqlite(&dir.keep().join("store.sqlite3"))
    }] {
        let config = config("[tools.echo]\nrate = \"1/h\"\nburst = 3\n");
        let (allowed, refusal) = until_refused(&limiters, &config, "echo", "local", 10);
        assert_eq!(allowed, 3);
        let refusal = refusal.expect("refused");
        assert_eq!(refusal.kind, ErrorType::RateLimited);
        assert_eq!(refusal.limit.as_deref(), Some("limits.tools.echo"));
        let ms = refusal.retry_after_ms.expect("retry hint");
        assert!(ms > 3_500_000 && ms <= 3_600_000, "{ms}");
        assert!(
            refusal
                .message
                .starts_with("Rate limit limits.tools.echo reached for tool echo"),
            "{}",
            refusal.message
        );
        // Another tool is not limited.
        assert!(
            limiters
                .check(&config, "other", "local", &Wait::default())
                .is_ok()
        );
    }
}

#[test]
fn a_refused_caller_can_call_again_after_the_hinted_wait() {
    let dir = tempfile::tempdir().unwrap();
    for limiters in [memory(), sqlite(&dir.path().join("store.sqlite3"))] {
        let config = config("[default]\nrate = \"20/s\"\nburst = 1\n");
        let (allowed, refusal) = until_refused(&limiters, &config, "echo", "local", 5);
        assert_eq!(allowed, 1);
        let ms = refusal.and_then(|r| r.retry_after_ms).expect("retry hint");
        assert!(ms <= 50, "{ms}");
        // Waiting out the hint (bounded: a few tries in case the clock is coarse).
        let mut passed = false;
        for _ in 0..20 {
            std::thread::sleep(Duration::from_millis(ms.max(1)));
            if limiters
                .check(&config, "echo", "local", &Wait::default())
                .is_ok()
            {
                passed = true;
                break;
            }
        }
        assert!(passed, "never allowed again");
    }
}

#[test]
fn each_caller_has_its_own_default_budget_and_a_caller_limit_spans_its_tools() {
    let limiters = memory();
    let config = config(
        "[default]\nrate = \"1/h\"\nburst = 2\n\
         [callers.ci]\nrate = \"1/h\"\nburst = 3\n",
    );
    assert_eq!(until_refused(&limiters, &config, "a", "alice", 10).0, 2);
    assert_eq!(until_refused(&limiters, &config, "a", "bob", 10).0, 2);
    // ci: two on `a` (default), then one on `b`, then its own limit over both tools.
    for _ in 0..2 {
        assert!(limiters.check(&config, "a", "ci", &Wait::default()).is_ok());
    }
    let (allowed, refusal) = until_refused(&limiters, &config, "b", "ci", 10);
    assert_eq!(allowed, 1);
    assert_eq!(
        refusal.and_then(|r| r.limit).as_deref(),
        Some("limits.callers.ci")
    );
}

#[test]
fn a_caller_tool_limit_applies_to_that_caller_on_that_tool_only() {
    let limiters = memory();
    let config = config("[callers.ci.tools.deploy]\nrate = \"1/h\"\nburst = 1\n");
    let (allowed, refusal) = until_refused(&limiters, &config, "deploy", "ci", 5);
    assert_eq!(allowed, 1);
    assert_eq!(
        refusal.and_then(|r| r.limit).as_deref(),
        Some("limits.callers.ci.tools.deploy")
    );
    assert_eq!(until_refused(&limiters, &config, "deploy", "other", 5).0, 5);
    assert_eq!(until_refused(&limiters, &config, "build", "ci", 5).0, 5);
}

#[test]
fn two_stores_on_one_sqlite_file_share_the_burst() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite3");
    let (one, two) = (sqlite(&path), sqlite(&path));
    let config = config("[tools.echo]\nrate = \"1/h\"\nburst = 5\n");
    let mut allowed = 0;
    for i in 0..10 {
        let limiters = if i % 2 == 0 { &one } else { &two };
        if limiters
            .check(&config, "echo", "local", &Wait::default())
            .is_ok()
        {
            allowed += 1;
        }
    }
    assert_eq!(allowed, 5);
}

#[test]
fn a_store_that_cannot_answer_refuses_the_call_naming_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    // A directory where the file should be: SQLite cannot open it.
    let path = dir.path().join("store.sqlite3");
    std::fs::create_dir(&path).unwrap();
    let limiters = sqlite(&path);
    let config = config("[tools.echo]\nrate = \"1/s\"\n");
    let refusal = limiters
        .check(&config, "echo", "local", &Wait::default())
        .expect_err("fails closed");
    assert_eq!(refusal.kind, ErrorType::Unavailable);
    assert!(
        refusal
            .message
            .contains("the rate limit limits.tools.echo could not be checked"),
        "{}",
        refusal.message
    );
}

#[test]
fn a_hostile_caller_id_or_tool_name_cannot_reach_another_limits_row() {
    let dir = tempfile::tempdir().unwrap();
    let limiters = sqlite(&dir.path().join("store.sqlite3"));
    // A caller named like a caller × tool pair, and a key far over the store's key limit.
    let config = config(
        "[callers.\"a.tools.b\"]\nrate = \"1/h\"\nburst = 1\n\
         [callers.a.tools.b]\nrate = \"1/h\"\nburst = 1\n",
    );
    assert_eq!(until_refused(&limiters, &config, "b", "a", 5).0, 1);
    assert_eq!(until_refused(&limiters, &config, "x", "a.tools.b", 5).0, 1);
    let long = "t".repeat(4096);
    let config = self::config("[default]\nrate = \"1/h\"\nburst = 2\n");
    assert_eq!(until_refused(&limiters, &config, &long, "local", 5).0, 2);
}

#[test]
fn an_unchecked_bad_limit_refuses_calls_instead_of_letting_them_through() {
    // What `toolhost.toml` loading refuses, reaching the limiter another way.
    let limiters = memory();
    let config = config("[tools.echo]\nrate = \"5/x\"\n");
    let refusal = limiters
        .check(&config, "echo", "local", &Wait::default())
        .expect_err("refused");
    assert_eq!(refusal.kind, ErrorType::Unavailable);
    assert!(
        refusal.message.contains("limits.tools.echo.rate"),
        "{}",
        refusal.message
    );
}
