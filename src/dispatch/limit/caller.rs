//! Who a call counts against. The one place that names the caller for `[limits]`: the
//! caller identity (`CallContext::caller`, kind and id) is not on this branch yet, so every
//! caller is `local` (as stdio callers will stay); at the merge this returns
//! `kind:id` of the caller, and `[limits.callers.ID]` matches that text.

use crate::registry::CallContext;

/// The text `[limits.callers.ID]` is matched against, and the caller part of the
/// limiter's keys.
pub(crate) fn caller_key(ctx: &CallContext) -> String {
    let _ = ctx;
    "local".to_string()
}
