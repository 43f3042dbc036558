//! A POST before rmcp sees it: what it carries, as the body check read it ([`Posted`]), and
//! the server's own refusal of it ([`refusal`]), which the layers in front of rmcp (the
//! session caps, a token's missing scopes) share.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rmcp::model::RequestId;
use serde_json::json;

/// What a POST carries, as the body check read it: its request id, whether it is
/// `initialize`, and the tool it calls if it is `tools/call`.
#[derive(Debug, Clone)]
pub(in crate::mcp) struct Posted {
    pub(in crate::mcp) id: Option<RequestId>,
    pub(in crate::mcp) initialize: bool,
    pub(in crate::mcp) tool: Option<String>,
}

/// The server's own refusal of a request before rmcp sees it (a cap of the
/// [`sessions`](super::sessions), a token's missing scopes in [`auth`](crate::mcp::auth)):
/// `status`, with a JSON-RPC error answering `id` as the body, and `Retry-After` for the
/// total cap.
pub(in crate::mcp) fn refusal(
    status: StatusCode,
    code: i32,
    id: Option<&RequestId>,
    message: &str,
) -> Response {
    let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let mut response = (status, axum::Json(error)).into_response();
    if status == StatusCode::SERVICE_UNAVAILABLE {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    }
    response
}
