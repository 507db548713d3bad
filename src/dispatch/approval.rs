//! Stage 5: approval. Tools with `requires_approval`, tools listed in `[approval] tools`
//! and calls a hook asked to approve go to the approver; a denial is the `approval_denied`
//! error.

use super::call::Call;
use super::errors::ErrorType;
use super::result::ToolError;
use crate::config::{ApprovalDefault, Config};
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

/// Stage 5 for `call`: the refusal when the call needs approval (the tool asks for it, it
/// is listed in `[approval] tools`, or a hook asked, `hook_approval` holding its message)
/// and the approver does not give it. A panicking approver fails closed.
pub(super) fn approve(
    approver: &dyn Approver,
    config: &Config,
    call: &Call<'_>,
    hook_approval: Option<Option<String>>,
) -> Option<ToolError> {
    let name = call.name;
    let listed = config.approval.tools.iter().any(|t| t == name);
    if !(call.tool.requires_approval || listed || hook_approval.is_some()) {
        return None;
    }
    let request = ApprovalRequest {
        tool_name: name,
        args: &call.args,
        ctx: call.ctx,
        reason: hook_approval.as_ref().and_then(|m| m.as_deref()),
    };
    let approved =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| approver.approve(&request)));
    match approved {
        Ok(true) => None,
        Ok(false) => Some(ToolError::new(
            ErrorType::ApprovalDenied,
            format!("Approval denied for {name}"),
        )),
        // Fail closed: a broken gate never lets a call through.
        Err(_) => {
            tracing::error!("the approver panicked deciding on {name}; blocking the call");
            Some(ToolError::new(
                ErrorType::Blocked,
                format!("The approval gate failed for {name}; the call was blocked"),
            ))
        }
    }
}
