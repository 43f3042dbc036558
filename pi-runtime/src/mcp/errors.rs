//! rmcp's errors in words: what failed, and the underlying cause's own message.
//!
//! rmcp's `Display` names the transport by its Rust type
//! (`Transport [rmcp::transport::worker::WorkerTransport<…>] error: …`) and prints unexpected
//! messages with `{:?}`; neither means anything to a user or a model. Each error is described
//! here from its variant instead, and a transport error by the chain of its causes.

use std::error::Error;

use rmcp::service::{ClientInitializeError, ServerInitializeError, ServiceError};
use rmcp::transport::DynamicTransportError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

use crate::error_chain::chain;
use crate::sse::byte_size;

/// Why the client's `initialize` handshake failed.
pub(super) fn client_init(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::ExpectedInitResponse(_)
        | ClientInitializeError::ExpectedInitResult(_)
        | ClientInitializeError::ConflictInitResponseId(..)
        | ClientInitializeError::UncorrelatedErrorResponse { .. } => {
            "the server did not answer `initialize` with an initialize result".to_owned()
        }
        ClientInitializeError::ConnectionClosed(_) => {
            "the server closed the connection during `initialize`".to_owned()
        }
        ClientInitializeError::TransportError { error, .. } => transport(error),
        ClientInitializeError::JsonRpcError(error) => {
            format!("the server refused `initialize`: {}", error.message)
        }
        ClientInitializeError::LegacyFallbackFailed { discover, .. } => client_init(discover),
        ClientInitializeError::Cancelled => "the connection was cancelled".to_owned(),
        other => without_type_names(&other.to_string()),
    }
}

/// Why serving one connection failed before it was initialized.
pub(super) fn server_init(error: &ServerInitializeError) -> String {
    match error {
        ServerInitializeError::ExpectedInitializeRequest(_)
        | ServerInitializeError::UnexpectedInitializeResponse(_) => {
            "the client did not begin with `initialize`".to_owned()
        }
        ServerInitializeError::ConnectionClosed(_) => {
            "the client closed the connection during `initialize`".to_owned()
        }
        ServerInitializeError::InitializeFailed(error) => {
            format!("`initialize` failed: {}", error.message)
        }
        ServerInitializeError::TransportError { error, .. } => transport(error),
        ServerInitializeError::Cancelled => "the connection was cancelled".to_owned(),
        other => without_type_names(&other.to_string()),
    }
}

/// Why a request failed, for the variants that do not describe themselves already.
pub(super) fn service(error: &ServiceError) -> String {
    match error {
        ServiceError::TransportSend(error) => match response_too_large(error) {
            Some(max) => message_too_large(max),
            None => format!("cannot send the request: {}", transport(error)),
        },
        ServiceError::TransportClosed => "the server closed the connection".to_owned(),
        ServiceError::UnexpectedResponse => {
            "the server answered with a result of another kind".to_owned()
        }
        other => without_type_names(&other.to_string()),
    }
}

/// A message from the server over the transport's limit.
pub(super) fn message_too_large(max: usize) -> String {
    format!(
        "the server sent a message larger than {}, the most the connection takes in one message",
        byte_size(max)
    )
}

/// An SSE event from the server over the transport's limit.
pub(super) fn event_too_large(max: usize) -> String {
    format!(
        "the server sent an SSE event larger than {}, the most the connection takes in one message",
        byte_size(max)
    )
}

/// A transport failure: its causes, outermost first, without the transport's type name.
fn transport(error: &DynamicTransportError) -> String {
    let inner: &(dyn Error + 'static) = error.error.as_ref();
    // Our HTTP backend's reqwest error is held without being its source, which would lose
    // the cause that matters ("Connection refused").
    if let Some(StreamableHttpError::Client(client)) =
        inner.downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        return causes(client);
    }
    causes(inner)
}

/// The limit a JSON response passed, when that is why the request failed: rmcp reports it as
/// a failure to send.
fn response_too_large(error: &DynamicTransportError) -> Option<usize> {
    match error
        .error
        .downcast_ref::<StreamableHttpError<reqwest::Error>>()?
    {
        StreamableHttpError::ResponseBodyTooLarge { max_size } => Some(*max_size),
        _ => None,
    }
}

/// `error: its source: …`, without type names.
fn causes(error: &dyn Error) -> String {
    without_type_names(&chain(error))
}

/// `text` without a bracketed or bare Rust path (`a::b::C<…>`); the words around it stay.
fn without_type_names(text: &str) -> String {
    text.split(' ')
        .filter(|word| !is_type_path(word))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A word such as `rmcp::transport::Foo<Bar>` or `[rmcp::x::Y]`: two or more segments, each
/// an identifier. An IPv6 address (`fe80::1`, `http://[::1]:80`) is no path: its segments are
/// empty, or hexadecimal groups.
fn is_type_path(word: &str) -> bool {
    let word = word.trim_matches(|c: char| "[](),:".contains(c));
    let path = word.split_once('<').map_or(word, |(path, _)| path);
    let segments: Vec<&str> = path.split("::").collect();
    let identifier = |s: &&str| {
        s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let hex_group = |s: &&str| s.len() <= 4 && s.chars().all(|c| c.is_ascii_hexdigit());
    segments.len() > 1 && segments.iter().all(identifier) && !segments.iter().all(hex_group)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_paths_are_left_out_and_addresses_kept() {
        assert_eq!(
            without_type_names(
                "Transport [rmcp::transport::worker::WorkerTransport<rmcp::X<Y>>] error: refused"
            ),
            "Transport error: refused"
        );
        for kept in [
            "cannot reach http://[::1]:80/mcp",
            "host fe80::1 is down",
            "host fe80::abcd is down",
        ] {
            assert_eq!(without_type_names(kept), kept);
        }
    }
}
