//! Stage 5: approval. Tools with `requires_approval`, tools listed in `[approval] tools`
//! and calls a hook asked to approve go to the approver; a denial is the `approval_denied`
//! error. A call from an MCP client follows `[approval] mcp`: `ask` (the default) asks the
//! client's user "Allow TOOL with ARGS?" by elicitation, through the call's asker — a
//! client without elicitation falls back to the approver (`[approval] default`) —,
//! `allow` runs the call, `deny` refuses it.

use super::call::Call;
use super::errors::ErrorType;
use super::result::ToolError;
use crate::config::{ApprovalDefault, ApprovalMcp, Config};
use crate::registry::{
    CallContext, Capability, InputAnswer, InputKind, InputRequest, ask_round_guarded,
    supports_guarded,
};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Longest rendering of the arguments in the approval question.
const MAX_SHOWN_ARGS: usize = 500;

/// The key of the approval question among a call's input requests (after the call's key
/// prefix: a tool called by `ctx.call` is asked under its own key, never answered by its
/// parent's approval).
const APPROVAL_KEY: &str = "toolhost/approval";

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
/// and it is not given. A panicking approver fails closed; the user's answer over MCP is
/// awaited at most `budget` (the call's deadline), then counts as a refusal.
/// Whether `call` needs approval: its tool requires it, `[approval] tools` lists it, or a
/// hook asked for it (`hook_asked`).
pub(super) fn required(config: &Config, call: &Call<'_>, hook_asked: bool) -> bool {
    let listed = config.approval.tools.iter().any(|t| t == call.name);
    call.tool.requires_approval || listed || hook_asked
}

pub(super) async fn approve(
    approver: &dyn Approver,
    config: &Config,
    call: &Call<'_>,
    hook_approval: Option<Option<String>>,
    budget: Duration,
) -> Option<ToolError> {
    let name = call.name;
    if !required(config, call, hook_approval.is_some()) {
        return None;
    }
    let reason = hook_approval.as_ref().and_then(|m| m.as_deref());
    if call.ctx.over_mcp {
        match config.approval.mcp {
            ApprovalMcp::Allow => return None,
            ApprovalMcp::Deny => return Some(denied(name, "[approval] mcp = \"deny\"")),
            ApprovalMcp::Ask => {
                if let Some(answer) = ask_user(call, reason, budget).await {
                    return answer;
                }
            }
        }
    }
    let request = ApprovalRequest {
        tool_name: name,
        args: &call.args,
        ctx: call.ctx,
        reason,
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

/// Asks the call's user (over its asker) whether `call` may run: `None` when nobody can be
/// asked that way (no asker, or its client has no elicitation), else the decision — only
/// `accept` runs the call; decline, cancel, a failure or no answer within `budget` refuse.
async fn ask_user(
    call: &Call<'_>,
    reason: Option<&str>,
    budget: Duration,
) -> Option<Option<ToolError>> {
    let asker = call.ctx.asker()?;
    if !supports_guarded(&**asker, Capability::Elicitation) {
        return None;
    }
    let mut message = format!("Allow {} with {}?", call.name, shown_args(&call.args));
    if let Some(reason) = reason {
        message.push_str(&format!(" ({reason})"));
    }
    let request = InputRequest::new(
        format!("{}{APPROVAL_KEY}", call.ctx.ask_prefix),
        InputKind::Elicitation {
            message,
            schema: json!({"type": "object", "properties": {}}),
        },
    );
    let answer = crate::lua::timer::until(
        Instant::now() + budget,
        ask_round_guarded(&**asker, vec![request]),
    )
    .await
    .map(|mut answers| answers.pop().unwrap_or(InputAnswer::Cancel));
    Some(match answer {
        Some(InputAnswer::Accept { .. }) => None,
        Some(InputAnswer::Decline) => Some(denied(call.name, "the user declined")),
        Some(InputAnswer::Cancel) => Some(denied(call.name, "the user cancelled")),
        Some(other) => {
            tracing::warn!(
                "approval of {} got an unusable answer: {other:?}",
                call.name
            );
            Some(denied(call.name, "no usable answer"))
        }
        None => Some(denied(call.name, "no answer in time")),
    })
}

/// The refusal of `name`, saying why.
fn denied(name: &str, why: &str) -> ToolError {
    ToolError::new(
        ErrorType::ApprovalDenied,
        format!("Approval denied for {name} ({why})"),
    )
}

/// The arguments as compact JSON, cut to [`MAX_SHOWN_ARGS`] characters.
fn shown_args(args: &Value) -> String {
    let text = serde_json::to_string(args).unwrap_or_default();
    match text.char_indices().nth(MAX_SHOWN_ARGS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}
