//! What the pipeline decided about one call, for its audit line (docs/telemetry.md): the
//! pre_tool_call hooks' verdict and the approval's. The MCP server puts one in the context
//! of each call it audits; the stages fill it in; a `ctx.call` child of an audited call gets a
//! fresh one (its decisions are its own, not its caller's).

use parking_lot::Mutex;

/// The pipeline's decisions about one call (`None`: the stage did not run, or had nothing
/// to decide).
#[derive(Debug, Default)]
pub(crate) struct Decisions {
    inner: Mutex<(Option<&'static str>, Option<&'static str>)>,
}

impl Decisions {
    /// Records the hooks' verdict: `proceed`, `approval_requested` or `blocked`.
    pub(crate) fn set_hooks(&self, verdict: &'static str) {
        self.inner.lock().0 = Some(verdict);
    }

    /// Records the approval's verdict: `approved` or `denied`.
    pub(crate) fn set_approval(&self, verdict: &'static str) {
        self.inner.lock().1 = Some(verdict);
    }

    /// The hooks' verdict and the approval's.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn get(&self) -> (Option<&'static str>, Option<&'static str>) {
        *self.inner.lock()
    }
}
