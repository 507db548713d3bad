//! The typed error results (docs/calls.md): JSON objects with `error` and `error_type`, their
//! text sanitised (no framing tags, code fences or CDATA) and cut to 2,048 characters.

use regex::Regex;
use std::sync::LazyLock;

/// Longest error text handed to a model.
pub(crate) const MAX_ERROR_CHARS: usize = 2048;

/// The kinds of error result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorType {
    /// No tool of that name in the caller's scope.
    UnknownTool,
    /// Outside the selection, or currently unavailable.
    Unavailable,
    /// Arguments failed validation.
    InvalidArguments,
    /// A pre_tool_call hook blocked the call.
    Blocked,
    /// The approver said no.
    ApprovalDenied,
    /// The agent loop must handle this tool.
    AgentLoop,
    /// The handler raised.
    HandlerError,
    /// The handler ran past its deadline.
    Timeout,
    /// The handler exceeded the memory limit.
    Memory,
    /// The handler returned an unsupported value.
    ToolResultContract,
    /// The caller cancelled the call (its [`CallContext::cancel`](crate::CallContext) token).
    Cancelled,
    /// The tool `needs` a client capability the caller's client did not declare (the MCP
    /// server answers JSON-RPC error -32021).
    MissingCapability,
    /// A `[limits]` rate limit refused the call (the MCP server answers JSON-RPC error
    /// -32029 naming the limit, with `Retry-After` on HTTP).
    RateLimited,
}

impl ErrorType {
    /// The `error_type` string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnknownTool => "unknown_tool",
            Self::Unavailable => "unavailable",
            Self::InvalidArguments => "invalid_arguments",
            Self::Blocked => "blocked",
            Self::ApprovalDenied => "approval_denied",
            Self::AgentLoop => "agent_loop",
            Self::HandlerError => "handler_error",
            Self::Timeout => "timeout",
            Self::Memory => "memory",
            Self::ToolResultContract => "tool_result_contract",
            Self::Cancelled => "cancelled",
            Self::MissingCapability => "missing_capability",
            Self::RateLimited => "rate_limited",
        }
    }
}

static FRAMING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)</?\s*(tool_call|tool_calls|tool_result|tool_response|function_call|function_calls|function_results|system|user|assistant|im_start|im_end)\b[^>]*>|<!\[CDATA\[|\]\]>|```",
    )
    .expect("static regex compiles")
});

/// Removes framing that could confuse a model about where the tool output ends, and cuts
/// the text to [`MAX_ERROR_CHARS`] characters.
pub(crate) fn sanitise(text: &str) -> String {
    let cleaned = FRAMING.replace_all(text, "");
    match cleaned.char_indices().nth(MAX_ERROR_CHARS) {
        Some((cut, _)) => cleaned[..cut].to_string(),
        None => cleaned.into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_framing_and_cuts() {
        let text = "<tool_call>x</tool_call> <SYSTEM>y</system> ```z``` <![CDATA[w]]>";
        assert_eq!(sanitise(text), "x y z w");
        assert_eq!(sanitise(&"é".repeat(3000)).chars().count(), MAX_ERROR_CHARS);
    }
}
