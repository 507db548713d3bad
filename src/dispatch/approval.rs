//! Stage 5: approval. Tools with `requires_approval`, tools listed in `[approval] tools`
//! and calls a hook asked to approve go to the approver; a denial is the `approval_denied`
//! error.

use crate::config::ApprovalDefault;
use crate::registry::CallContext;
use serde_json::Value;

/// What the approver is asked.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalRequest<'a> {
    /// The tool.
    pub tool_name: &'a str,
    /// The arguments it would run with.
    pub args: &'a Value,
    /// The call context.
    pub ctx: &'a CallContext,
    /// The message of the hook that asked for approval, if any.
    pub reason: Option<&'a str>,
}

/// Decides whether a call may run. Implementations must not block for long: an
/// interactive prompt belongs to a front end (the CLI asks on a TTY).
pub trait Approver: Send + Sync {
    /// `true` to run the call.
    fn approve(&self, request: &ApprovalRequest<'_>) -> bool;
}

/// The configured answer (`[approval] default`, `"deny"` unless set to `"allow"`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PolicyApprover(pub ApprovalDefault);

impl Approver for PolicyApprover {
    fn approve(&self, _request: &ApprovalRequest<'_>) -> bool {
        self.0 == ApprovalDefault::Allow
    }
}
