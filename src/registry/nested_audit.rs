//! The audit log's view of `ctx.call` (docs/telemetry.md#audit-log): the MCP server puts a
//! [`NestedAudit`] in the context of each call it audits; every `ctx.call` that call makes
//! (and theirs, at any depth) reports itself there when it ends, so each child gets its own
//! audit line naming its parent.
// Only the MCP server audits.
#![cfg_attr(not(feature = "mcp"), allow(dead_code))]

use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// A `ctx.call` that ended, as its audit line tells it.
pub(crate) struct NestedCall<'a> {
    /// The child's call id (`PARENT/N`: the parent's id, then the child's number).
    pub(crate) request_id: &'a str,
    /// The calling call's id.
    pub(crate) parent: &'a str,
    /// The MCP task the chain runs in, if any.
    pub(crate) task_id: Option<&'a str>,
    /// The tool called.
    pub(crate) tool: &'a str,
    /// The arguments it was called with.
    pub(crate) args: &'a Value,
    /// The hooks' and the approval's decisions about it.
    pub(crate) decisions: (Option<&'static str>, Option<&'static str>),
    /// The error type of its result, if it failed.
    pub(crate) error_type: Option<&'a str>,
    /// From the `ctx.call` to its answer.
    pub(crate) duration: Duration,
}

/// Where the `ctx.call`s of an audited call report themselves.
pub(crate) type NestedAudit = Arc<dyn Fn(&NestedCall<'_>) + Send + Sync>;
