//! Stage 3's last check: a tool whose `needs` name a client capability the call's asker
//! does not support (an MCP client that did not declare `elicitation`, `sampling` or
//! `roots`) is refused with `missing_capability` before anything of it runs; the MCP
//! server answers that with JSON-RPC error -32021. A call without an asker (the command
//! line, the Rust API by default) is not checked: its requests are answered as documented
//! (`cancel`, no roots, a sampling error).

use super::call::Call;
use super::errors::ErrorType;
use super::result::ToolError;
use crate::registry::{Capability, supports_guarded};

/// The refusal when the call's asker lacks a capability the tool needs.
pub(super) fn check(call: &Call<'_>) -> Option<ToolError> {
    let asker = call.ctx.asker()?;
    let missing: Vec<Capability> = call
        .tool
        .needs
        .iter()
        .copied()
        .filter(|need| !supports_guarded(&**asker, *need))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let named: Vec<String> = missing.iter().map(|m| format!("'{m}'")).collect();
    Some(
        ToolError::new(
            ErrorType::MissingCapability,
            format!(
                "{} needs the client capability {} (declared in its `needs`), which this client did not declare",
                call.name,
                named.join(", ")
            ),
        )
        .with_needs(missing),
    )
}
