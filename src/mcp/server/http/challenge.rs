//! The error answers of the HTTP door: a status, a `WWW-Authenticate: Bearer` challenge
//! (RFC 6750 §3) and a JSON-RPC error body an MCP client library can show.

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

/// An HTTP error answer with a `WWW-Authenticate: Bearer` challenge of `params` and a
/// JSON-RPC error body.
pub(super) fn json_rpc_error(
    status: StatusCode,
    code: i64,
    message: &str,
    params: &[String],
    raw_id: Option<&str>,
) -> Response {
    let error = serde_json::json!({"code": code, "message": message});
    let body = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{},\"error\":{error}}}",
        raw_id.unwrap_or("null")
    );
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let challenge = match params {
        [] => "Bearer".to_string(),
        params => format!("Bearer {}", params.join(", ")),
    };
    // Every part is ours or checked to be header-safe; a failure would be a bug, and then a
    // bare challenge is still a correct one.
    let value = HeaderValue::from_str(&challenge).unwrap_or(HeaderValue::from_static("Bearer"));
    headers.insert(header::WWW_AUTHENTICATE, value);
    response
}
