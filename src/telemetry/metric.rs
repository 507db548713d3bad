//! The metrics (docs/telemetry.md#metrics): names, and the few helpers that record them
//! at their one place each. Names are OpenTelemetry-style (dotted); the Prometheus
//! exporter writes them with underscores and unit suffixes
//! (`mcp.server.operation.duration` → `mcp_server_operation_duration_seconds`).
// The MCP server and the binary record some of these; the library alone does not.
#![cfg_attr(not(feature = "mcp"), allow(dead_code))]

use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicBool, Ordering};

use metrics::{Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge};

/// Histogram (seconds) of MCP requests, by `method`, `tool` and `outcome`.
pub(crate) const OPERATION_DURATION: &str = "mcp.server.operation.duration";
/// Counter of tool calls through the pipeline, by `tool`, `outcome` and `error_type`.
pub(crate) const TOOL_CALLS: &str = "toolhost.tool.calls";
/// Gauge of calls running on the VM pool's threads.
pub(crate) const CALLS_RUNNING: &str = "toolhost.calls.running";
/// Gauge of calls sent to a VM that has not started them yet.
pub(crate) const CALLS_QUEUED: &str = "toolhost.calls.queued";
/// Counter of calls the host stopped, by `reason` (`deadline`, `memory`).
pub(crate) const VM_KILLS: &str = "toolhost.vm.kills";
/// Counter of reloads, by `outcome` (`ok`, `error`).
pub(crate) const RELOADS: &str = "toolhost.reloads";
/// Counter of tool files that failed to load (at start and at reloads).
pub(crate) const LOAD_ERRORS: &str = "toolhost.load.errors";
/// Histogram (seconds) of `store` operations, by `backend` and `operation`.
pub(crate) const STORE_DURATION: &str = "toolhost.store.operation.duration";
/// Counter of failed `store` operations, by `backend` and `operation`.
pub(crate) const STORE_ERRORS: &str = "toolhost.store.errors";
/// Gauge: 1 while the external MCP server `server` is connected, 0 while it is not.
pub(crate) const MCP_SERVER_UP: &str = "toolhost.mcp_server.up";
/// Gauge of open MCP sessions, by `transport`.
pub(crate) const SESSIONS: &str = "mcp.server.sessions";
/// Counter of calls a rate limit refused, by `kind` (`default`, `tool`, `caller`,
/// `caller_tool`: the `[limits]` table of the limit).
pub(crate) const RATE_LIMITED: &str = "toolhost.rate_limit.rejections";
/// Counter of audit lines that could not be written.
pub(crate) const AUDIT_WRITE_ERRORS: &str = "toolhost.audit.write_errors";

/// Whether a recorder is installed: the metrics with labels made per call (which
/// allocate) are skipped without one, so metrics off cost one load.
static ENABLED: AtomicBool = AtomicBool::new(false);

/// Whether metrics are being recorded.
pub(crate) fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Turns toolhost's metrics on and describes them (units, help text) to the `metrics`
/// recorder installed in this process (docs/telemetry.md#metrics): an embedder that
/// installs its own recorder calls it once after; `toolhost serve` does it for its
/// Prometheus recorder. Until then the metrics that would allocate per call are skipped.
pub fn describe() {
    ENABLED.store(true, Ordering::Relaxed);
    describe_histogram!(
        OPERATION_DURATION,
        Unit::Seconds,
        "MCP requests, by method, tool and outcome"
    );
    describe_counter!(TOOL_CALLS, "Tool calls, by tool, outcome and error type");
    describe_gauge!(CALLS_RUNNING, "Calls running on the VM pool");
    describe_gauge!(CALLS_QUEUED, "Calls waiting for a VM");
    describe_counter!(VM_KILLS, "Calls stopped by the host, by reason");
    describe_counter!(RELOADS, "Reloads, by outcome");
    describe_counter!(LOAD_ERRORS, "Tool files that failed to load");
    describe_histogram!(
        STORE_DURATION,
        Unit::Seconds,
        "store operations, by backend and operation"
    );
    describe_counter!(
        STORE_ERRORS,
        "Failed store operations, by backend and operation"
    );
    describe_gauge!(MCP_SERVER_UP, "1 while an external MCP server is connected");
    describe_gauge!(SESSIONS, "Open MCP sessions, by transport");
    describe_counter!(AUDIT_WRITE_ERRORS, "Audit lines that could not be written");
    describe_counter!(RATE_LIMITED, "Calls refused by a rate limit, by limit kind");
}

/// The `tool` label of a call of `name`: the name only for a call of a tool that exists,
/// so a client cannot grow the metrics without bound by calling made-up names.
pub(crate) fn tool_label<'a>(name: &'a str, outcome: &str, error_type: Option<&str>) -> &'a str {
    match (outcome, error_type) {
        ("refused", _) | (_, Some("unknown_tool")) => "_unknown",
        _ => name,
    }
}

/// The handles of one per-call metric, by tool label and two more (fixed) labels, made
/// once each: the `metrics` macros would build a key (a label vector, the tool's name
/// copied) and look it up in the recorder's registry at every call. Tool labels are the
/// names of tools that exist (or `_unknown`, see [`tool_label`]), so this stays as small
/// as the recorder's own series.
struct PerTool<H> {
    by_tool: RwLock<HashMap<Box<str>, Vec<Labelled<H>>>>,
    make: fn(&str, &'static str, &'static str) -> H,
}

/// A handle and its two labels besides the tool.
type Labelled<H> = (&'static str, &'static str, H);

impl<H> PerTool<H> {
    fn new(make: fn(&str, &'static str, &'static str) -> H) -> Self {
        Self {
            by_tool: RwLock::new(HashMap::new()),
            make,
        }
    }

    /// Runs `use_it` on the handle of (`tool`, `a`, `b`), made the first time.
    fn with(&self, tool: &str, a: &'static str, b: &'static str, use_it: impl FnOnce(&H)) {
        let same = |(x, y, _): &&(&str, &str, H)| *x == a && *y == b;
        if let Some((_, _, handle)) = self
            .by_tool
            .read()
            .get(tool)
            .and_then(|handles| handles.iter().find(same))
        {
            return use_it(handle);
        }
        let mut by_tool = self.by_tool.write();
        let handles = by_tool.entry(tool.into()).or_default();
        if !handles.iter().any(|entry| same(&entry)) {
            handles.push((a, b, (self.make)(tool, a, b)));
        }
        if let Some((_, _, handle)) = handles.iter().find(same) {
            use_it(handle);
        }
    }
}

/// Counts a call through the pipeline of `tool` (its [`tool_label`]) that ended with
/// `error_type` (`None`: ok), when metrics are on.
pub(crate) fn tool_call(tool: &str, error_type: Option<&'static str>) {
    static CALLS: LazyLock<PerTool<metrics::Counter>> = LazyLock::new(|| {
        PerTool::new(|tool, outcome, error_type| {
            counter!(TOOL_CALLS, "tool" => tool.to_string(), "outcome" => outcome,
                "error_type" => error_type)
        })
    });
    if !enabled() {
        return;
    }
    let outcome = if error_type.is_some() { "error" } else { "ok" };
    let tool = tool_label(tool, outcome, error_type);
    CALLS.with(tool, outcome, error_type.unwrap_or(""), |calls| {
        calls.increment(1);
    });
}

/// Records an MCP request of `method` for `tool` (`""` for none, else its name, labelled
/// by [`tool_label`]) that ended with `outcome` (and `error_type`) after `seconds`, when
/// metrics are on.
pub(crate) fn operation(
    method: &'static str,
    tool: &str,
    outcome: &'static str,
    error_type: Option<&str>,
    seconds: f64,
) {
    static OPERATIONS: LazyLock<PerTool<metrics::Histogram>> = LazyLock::new(|| {
        PerTool::new(|tool, method, outcome| {
            metrics::histogram!(OPERATION_DURATION, "method" => method,
                "tool" => tool.to_string(), "outcome" => outcome)
        })
    });
    if !enabled() {
        return;
    }
    let tool = tool_label(tool, outcome, error_type);
    OPERATIONS.with(tool, method, outcome, |histogram| histogram.record(seconds));
}

/// Counts a call the host stopped for `reason` (`deadline` or `memory`).
pub(crate) fn vm_kill(reason: &'static str) {
    counter!(VM_KILLS, "reason" => reason).increment(1);
}

/// Counts a reload (`ok`: it replaced the tools) and the load errors it found.
pub(crate) fn reloaded(ok: bool, load_errors: usize) {
    counter!(RELOADS, "outcome" => if ok { "ok" } else { "error" }).increment(1);
    counter!(LOAD_ERRORS).increment(load_errors as u64);
}

/// Counts a call refused by a limit of `kind` (`[limits]` table).
pub(crate) fn rate_limited(kind: &'static str) {
    counter!(RATE_LIMITED, "kind" => kind).increment(1);
}

/// Marks the external MCP server `server` up or down.
pub(crate) fn mcp_server_up(server: &str, up: bool) {
    gauge!(MCP_SERVER_UP, "server" => server.to_string()).set(if up { 1.0 } else { 0.0 });
}

/// One open MCP session of `transport` (`stdio`, `http`); closed when dropped.
pub(crate) struct OpenSession(&'static str);

impl OpenSession {
    /// Counts a session of `transport` as open.
    pub(crate) fn open(transport: &'static str) -> Self {
        gauge!(SESSIONS, "transport" => transport).increment(1.0);
        Self(transport)
    }
}

impl Drop for OpenSession {
    fn drop(&mut self) {
        gauge!(SESSIONS, "transport" => self.0).decrement(1.0);
    }
}

/// The VM pool's gauges, looked up once (after the recorder is installed: only then are
/// they used) rather than at each of a call's four changes.
fn queued_gauge() -> &'static metrics::Gauge {
    static GAUGE: std::sync::OnceLock<metrics::Gauge> = std::sync::OnceLock::new();
    GAUGE.get_or_init(|| gauge!(CALLS_QUEUED))
}

fn running_gauge() -> &'static metrics::Gauge {
    static GAUGE: std::sync::OnceLock<metrics::Gauge> = std::sync::OnceLock::new();
    GAUGE.get_or_init(|| gauge!(CALLS_RUNNING))
}

/// A call waiting for its VM (`toolhost.calls.queued`) until [`start`](Self::start)ed or
/// dropped.
pub(crate) struct Queued(bool);

impl Queued {
    /// Counts a call as queued.
    pub(crate) fn new() -> Self {
        let on = enabled();
        if on {
            queued_gauge().increment(1.0);
        }
        Self(on)
    }

    /// The call starts on its VM: running (`toolhost.calls.running`) until the returned
    /// guard is dropped.
    pub(crate) fn start(self) -> Running {
        // Dropping `self` counts the call out of the queue.
        Running::new(self.0)
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        if self.0 {
            queued_gauge().decrement(1.0);
        }
    }
}

/// A call running on its VM until dropped.
pub(crate) struct Running(bool);

impl Running {
    fn new(on: bool) -> Self {
        if on {
            running_gauge().increment(1.0);
        }
        Self(on)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.0 {
            running_gauge().decrement(1.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_up_and_refused_names_share_one_label() {
        assert_eq!(tool_label("echo", "ok", None), "echo");
        assert_eq!(tool_label("echo", "error", Some("timeout")), "echo");
        assert_eq!(tool_label("x1", "error", Some("unknown_tool")), "_unknown");
        assert_eq!(tool_label("x2", "refused", Some("busy")), "_unknown");
    }
}
