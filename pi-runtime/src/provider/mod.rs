//! Model providers: one [`HttpModel`](http::HttpModel) for every wire API, one folder per
//! wire API (wire types, request conversion, stream parsing), presets, and the faux model
//! used by tests and examples.
//!
//! | [`Api`] | folder | servers |
//! |---|---|---|
//! | `openai-responses` | [`openai_responses`] | OpenAI (the [`presets::openai`] default: reasoning survives tool calls) |
//! | `openai-completions` | [`openai`] | OpenAI Chat Completions, DeepSeek, every compatible server ([`presets::openai_completions`]) |
//! | `anthropic-messages` | [`anthropic`] | Anthropic |
//! | `google-generative-ai` | [`google`] | the Gemini API |

mod model;

pub mod faux;

#[cfg(feature = "anthropic")]
#[cfg_attr(docsrs, doc(cfg(feature = "anthropic")))]
pub mod anthropic;
#[cfg(feature = "google")]
#[cfg_attr(docsrs, doc(cfg(feature = "google")))]
pub mod google;
#[cfg(feature = "openai")]
#[cfg_attr(docsrs, doc(cfg(feature = "openai")))]
pub mod openai;
#[cfg(feature = "openai-responses")]
#[cfg_attr(docsrs, doc(cfg(feature = "openai-responses")))]
pub mod openai_responses;

// What the wire APIs share: only built with the HTTP model. A build with only some of the
// APIs leaves parts of these unused; that is expected, not dead code to remove.
#[cfg(feature = "http")]
#[cfg_attr(
    not(all(
        feature = "openai",
        feature = "openai-responses",
        feature = "anthropic",
        feature = "google"
    )),
    allow(dead_code, unused_imports)
)]
mod shared;
#[cfg(feature = "http")]
#[cfg_attr(
    not(all(
        feature = "openai",
        feature = "openai-responses",
        feature = "anthropic",
        feature = "google"
    )),
    allow(unused_imports)
)]
pub(crate) use shared::{choice, compat, ids, strict, thinking, tokens, transform};

#[cfg(feature = "http")]
mod request;
#[cfg(feature = "http")]
pub(crate) mod wire;

#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod presets;

pub use model::{Api, Compat, Model, PromptCacheKeyMode};

#[cfg(feature = "http")]
pub use request::{RequestError, request_body, request_headers};
