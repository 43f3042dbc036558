//! Model providers: one [`HttpModel`] for every wire API, one folder per wire API (wire
//! types, request conversion, stream parsing), presets, and the faux model used by tests
//! and examples.
//!
//! | [`Api`] | folder | servers |
//! |---|---|---|
//! | `openai-responses` | [`openai_responses`] | OpenAI (the [`presets::openai`] default: reasoning survives tool calls) |
//! | `openai-completions` | [`openai`] | OpenAI Chat Completions, DeepSeek, every compatible server ([`presets::openai_completions`]) |
//! | `anthropic-messages` | [`anthropic`] | Anthropic |
//! | `google-generative-ai` | [`google`] | the Gemini API |

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
