//! Whose a task is: the principal its transport tells, recorded with the task; `tasks/get`,
//! `tasks/update` and `tasks/cancel` from another principal find no such task (the same
//! answer as an unknown id, so a task's existence does not leak either).
//!
//! Today a transport tells one of two principals: the local user of a stdio server, or
//! whoever passed the HTTP server's bearer-token check (there is one token, so one HTTP
//! principal). Processes that share a store file therefore never show a stdio user's tasks
//! to HTTP callers, nor the reverse. Named tokens or OAuth subjects would be finer
//! principals of the same kind.

use rmcp::service::{RequestContext, RoleServer};

/// The principal of a stdio request (the user who started the server).
const LOCAL: &str = "local";
/// The principal of an HTTP request that passed the bearer-token check.
#[cfg(feature = "http")]
const HTTP: &str = "http";

/// The principal `context`'s request came from.
pub(crate) fn of(context: &RequestContext<RoleServer>) -> &'static str {
    // rmcp's streamable-HTTP service puts the HTTP request's parts in every request's
    // extensions; no other transport does.
    #[cfg(feature = "http")]
    if context
        .extensions
        .get::<axum::http::request::Parts>()
        .is_some()
    {
        return HTTP;
    }
    let _ = context;
    LOCAL
}
