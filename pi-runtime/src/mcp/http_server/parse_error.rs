//! JSON-RPC's own errors for a POST body that is not a JSON-RPC message, in front of rmcp's
//! streamable HTTP service.
//!
//! rmcp answers such a body with `415 Unsupported Media Type`, which tells a client that sent
//! `application/json` to change a header that was right, and it cannot be configured
//! otherwise. This layer reads the body first and answers what the JSON-RPC spec says: `-32700`
//! (parse error) for a body that is not JSON, `-32600` (invalid request) for JSON that is not
//! a message, both with `400 Bad Request`. Anything else goes on to rmcp untouched, with what
//! the session layer needs of it ([`Posted`]).

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use serde_json::{Value, json};

use super::posted::Posted;

/// JSON-RPC's code for a body that is not JSON.
const PARSE_ERROR: i32 = -32700;
/// JSON-RPC's code for JSON that is not a request, notification or response.
const INVALID_REQUEST: i32 = -32600;

/// The layer: `max_bytes` is the body limit rmcp was given, applied here the same way.
pub(super) async fn check_body(
    State(max_bytes): State<usize>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST || !is_json(&request) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, max_bytes).await else {
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("Payload Too Large: request body exceeds {max_bytes} bytes"),
        )
            .into_response();
    };
    let message = match message(&bytes) {
        Ok(message) => message,
        Err(error) => return (StatusCode::BAD_REQUEST, axum::Json(error)).into_response(),
    };
    let mut request = Request::from_parts(parts, Body::from(bytes));
    request.extensions_mut().insert(posted(&message));
    next.run(request).await
}

/// What the session layer needs to know of a message.
fn posted(message: &ClientJsonRpcMessage) -> Posted {
    match message {
        ClientJsonRpcMessage::Request(request) => Posted {
            id: Some(request.id.clone()),
            initialize: matches!(request.request, ClientRequest::InitializeRequest(_)),
            tool: match &request.request {
                ClientRequest::CallToolRequest(call) => Some(call.params.name.to_string()),
                _ => None,
            },
        },
        _ => Posted {
            id: None,
            initialize: false,
            tool: None,
        },
    }
}

/// Whether the request says its body is JSON (rmcp's own test: the media type before any `;`).
fn is_json(request: &Request) -> bool {
    request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            let essence = value.split_once(';').map_or(value, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}

/// The message in `body`, or the JSON-RPC error response for a body rmcp would refuse.
fn message(body: &[u8]) -> Result<ClientJsonRpcMessage, Value> {
    // The usual case, in one pass; a body that fails is read again to say why.
    if let Ok(message) = serde_json::from_slice::<ClientJsonRpcMessage>(body) {
        return Ok(message);
    }
    let value: Value = match serde_json::from_slice(body) {
        Ok(value) => value,
        Err(error) => {
            return Err(error_response(
                Value::Null,
                PARSE_ERROR,
                &format!("Parse error: {error}"),
            ));
        }
    };
    let error = match serde_json::from_value::<ClientJsonRpcMessage>(value.clone()) {
        Ok(message) => return Ok(message),
        Err(error) => error,
    };
    // The request's id when it has a usable one, so the client can match the answer.
    let id = match value.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    };
    Err(error_response(
        id,
        INVALID_REQUEST,
        &format!("Invalid Request: {error}"),
    ))
}

fn error_response(id: Value, code: i32, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_that_are_not_messages_get_json_rpc_errors() {
        let code = |body: &str| {
            message(body.as_bytes())
                .err()
                .map(|e| (e["id"].clone(), e["error"]["code"].clone()))
        };
        assert_eq!(code("{not json"), Some((Value::Null, json!(PARSE_ERROR))));
        assert_eq!(code(""), Some((Value::Null, json!(PARSE_ERROR))));
        assert_eq!(
            code(r#"{"id": 7, "method": 3}"#),
            Some((json!(7), json!(INVALID_REQUEST)))
        );
        assert_eq!(code("[1]"), Some((Value::Null, json!(INVALID_REQUEST))));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#), None);
    }
}
