//! Who a call counts against: the one place that names the caller for `[limits]`.
//!
//! The key is the caller's kind and id (`token:ci`, `oauth:alice`, `local:local`), so a
//! static token and an OAuth subject that share an id never share a budget. A
//! `[limits.callers.ID]` table names either that whole key or the id alone (`ci`), which
//! then applies to the callers of every kind with that id (see `Limits::applicable`).

use crate::registry::CallContext;

/// The caller part of the limiter's keys: `kind:id` of the call's caller.
pub(crate) fn caller_key(ctx: &CallContext) -> String {
    format!("{}:{}", ctx.caller.kind().as_str(), ctx.caller.id())
}

/// The id part of a [`caller_key`] (kinds never hold a `:`).
pub(super) fn id_of(key: &str) -> &str {
    key.split_once(':').map_or(key, |(_, id)| id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_of_a_key_keeps_colons_of_the_id() {
        assert_eq!(id_of("oauth:urn:user:7"), "urn:user:7");
        assert_eq!(id_of("local"), "local");
    }
}
