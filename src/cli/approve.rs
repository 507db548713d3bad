//! The CLI's approver: asks y/N on the terminal when there is one, otherwise answers with
//! the config's `[approval] default`.

use crate::{ApprovalRequest, Approver};
use std::io::{BufRead, IsTerminal, Write};

/// Prompts on a TTY; falls back to the configured policy.
pub(super) struct TerminalApprover {
    /// The answer without a terminal: the configured policy's (`[approval] default`).
    pub fallback: Box<dyn Approver>,
}

impl Approver for TerminalApprover {
    fn approve(&self, request: &ApprovalRequest<'_>) -> bool {
        if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
            return self.fallback.approve(request);
        }
        let mut stderr = std::io::stderr();
        let reason = request
            .reason
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        let _ = write!(
            stderr,
            "Allow {}{reason} with {}? [y/N] ",
            request.tool_name, request.args
        );
        let _ = stderr.flush();
        let mut answer = String::new();
        if std::io::stdin().lock().read_line(&mut answer).is_err() {
            return false;
        }
        matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
    }
}
