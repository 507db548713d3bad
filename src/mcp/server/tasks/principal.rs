//! Whose a task is: the caller its transport vouched for ([`Caller`]), recorded with the
//! task as its principal; `tasks/get`, `tasks/update` and `tasks/cancel` from another
//! principal find no such task (the same answer as an unknown id, so a task's existence does
//! not leak either).
//!
//! A stdio request comes from the local user. An HTTP request comes from whoever the
//! bearer-token check identified — a named static token, or an OAuth token's subject —
//! or, on a loopback server that checks nothing, from an anonymous local client (another
//! principal than the stdio user, as before there were names). Two tokens' tasks are
//! therefore invisible to each other, and processes that share a store never show a stdio
//! user's tasks to HTTP callers, nor the reverse.

use crate::Caller;
use rmcp::service::{RequestContext, RoleServer};

/// The caller `context`'s request came from.
pub(crate) fn caller_of(context: &RequestContext<RoleServer>) -> Caller {
    // rmcp's streamable-HTTP service puts the HTTP request's parts in every request's
    // extensions; no other transport does. The auth check put the caller in them.
    #[cfg(feature = "http")]
    if let Some(parts) = context.extensions.get::<axum::http::request::Parts>() {
        return parts
            .extensions
            .get::<Caller>()
            .cloned()
            .unwrap_or_else(Caller::anonymous);
    }
    let _ = context;
    Caller::local()
}

/// The principal (task owner) of `context`'s request.
pub(crate) fn of(context: &RequestContext<RoleServer>) -> String {
    caller_of(context).principal()
}
