//! Stage 3: the agent-loop guard. Some tools (`todo`, `memory`, `session_search`,
//! `delegate_task` by default; config `agent_loop_tools`) only make sense inside the
//! embedding agent's loop, which must intercept them before calling the host. Reaching the
//! host with one is a bug in the loop, reported as `agent_loop` whether or not such a tool
//! is registered.

use super::errors::ErrorType;
use super::result::ToolError;
use crate::config::Config;

/// The default `agent_loop_tools`.
pub(crate) const DEFAULT_AGENT_LOOP_TOOLS: [&str; 4] =
    ["todo", "memory", "session_search", "delegate_task"];

/// The `agent_loop` error when `name` must be handled by the agent loop.
pub(super) fn guard(config: &Config, name: &str) -> Option<ToolError> {
    let listed = match &config.agent_loop_tools {
        Some(names) => names.iter().any(|n| n == name),
        None => DEFAULT_AGENT_LOOP_TOOLS.contains(&name),
    };
    listed.then(|| {
        ToolError::new(
            ErrorType::AgentLoop,
            format!("{name} must be handled by the agent loop"),
        )
    })
}
