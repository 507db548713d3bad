//! rmcp's streamable-HTTP service behind an `Arc`. axum and every middleware layer clone
//! the service they wrap for each request, and rmcp's service clones itself once more in
//! `call`: its configuration (origin and host lists, a cancellation token) was copied a
//! dozen times per request (callgrind: ≈20k instructions, a sixth of an HTTP call's
//! server CPU). The route below holds it once; cloning the route is one reference count.

use axum::body::Body;
use axum::extract::Request;
use axum::routing::MethodRouter;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::SessionManager;
use std::sync::Arc;

/// Every method of a request to `service` (rmcp answers the ones it does not serve).
pub(super) fn route<S, M>(service: StreamableHttpService<S, M>) -> MethodRouter
where
    S: rmcp::ServerHandler + Send + 'static,
    M: SessionManager,
{
    let service = Arc::new(service);
    axum::routing::any(move |request: Request| {
        let service = service.clone();
        async move { service.handle(request).await.map(Body::new) }
    })
}
