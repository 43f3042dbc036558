//! The `anthropic-messages` API: request conversion, stream parsing and the client.

pub(crate) mod request;
pub(crate) mod stream;

pub mod client;
