//! Model providers: one [`HttpModel`] for every wire API, one folder per wire API (wire
//! types, request conversion, stream parsing), presets, and the faux model used by tests
//! and examples.

mod model;

pub mod anthropic;
pub mod faux;
pub mod google;
pub mod openai;
pub mod openai_responses;

pub(crate) mod compat;
mod excerpt;
mod ids;
pub(crate) mod output;
mod request;
pub(crate) mod strict;
mod thinking;
mod tokens;
pub(crate) mod transform;

pub mod http;
pub mod presets;

pub use http::{HttpModel, HttpOptions, RetryPolicy};
pub use model::{Api, Compat, Model};
pub use request::request_body;
#[doc(hidden)]
pub use request::request_payload;
