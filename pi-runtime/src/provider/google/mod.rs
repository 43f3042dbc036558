//! The `google-generative-ai` API: request conversion, stream parsing and the client.

pub(crate) mod request;
pub(crate) mod stream;

mod client;

#[allow(unused_imports, reason = "filled in as the client lands")]
pub use client::*;
