//! The JSON body a provider request would POST, built without sending it.

use serde_json::Value;

use crate::provider::wire::WireApi;
use crate::provider::{Api, Model};
use crate::stream::{Context, StreamOptions};

/// Why a request cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The request must fail before the network (the model sees this text), for example a
    /// tool that requires constrained sampling the provider cannot give.
    #[error("{0}")]
    Invalid(String),
    /// This build of the crate leaves the model's wire API out.
    #[error("the {api} API is not built in: enable the `{feature}` feature of pi-runtime")]
    NotBuilt {
        /// The wire API (`anthropic-messages`, ...).
        api: &'static str,
        /// The cargo feature that brings it.
        feature: &'static str,
    },
}

/// The JSON body a request for `model` would POST: what [`HttpModel`](super::http::HttpModel)
/// sends, key order included. Useful for logging, dry runs and tests.
///
/// # Errors
/// [`RequestError::Invalid`]: the request must fail before the network, for example
/// `Tool "pick" requires JSON-schema constrained sampling, but oneOf schemas are unsupported.`
/// [`RequestError::NotBuilt`]: the model's API is not compiled in.
///
/// # Examples
///
/// ```
/// use pi_runtime::provider::{Api, Model, request_body};
/// use pi_runtime::{Context, StreamOptions, UserMessage};
///
/// let mut model = Model::new(Api::OpenAiCompletions, "openai", "gpt-test", "https://api.openai.com/v1");
/// model.max_tokens = 1024;
/// let context = Context::new("Be brief.", vec![UserMessage::text("hi").into()], vec![]);
/// let body = request_body(&model, &context, &StreamOptions::default())?;
/// assert_eq!(body["messages"][0], serde_json::json!({"role": "system", "content": "Be brief."}));
/// assert_eq!(body["max_completion_tokens"], 1024);
/// # Ok::<(), pi_runtime::provider::RequestError>(())
/// ```
pub fn request_body(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<Value, RequestError> {
    wire_api(model.api)?
        .body(model, context, options)
        .map_err(RequestError::Invalid)
}

/// The headers of the wire API itself a request for `model` would send with
/// [`request_body`]'s body (a version, beta flags such as Anthropic's `anthropic-beta`),
/// without the key and the caller's own headers (which replace a header of the same name).
///
/// ```
/// use pi_runtime::provider::{Api, Model, request_headers};
/// use pi_runtime::{Context, StreamOptions, ThinkingLevel, UserMessage};
///
/// let mut model = Model::new(Api::AnthropicMessages, "anthropic", "claude-test", "https://api.anthropic.com");
/// model.reasoning = true;
/// let context = Context::new("Be brief.", vec![UserMessage::text("hi").into()], vec![]);
/// let mut options = StreamOptions::default();
/// options.reasoning = Some(ThinkingLevel::Medium);
/// let headers = request_headers(&model, &context, &options)?;
/// assert!(headers.contains(&("anthropic-beta".into(), "interleaved-thinking-2025-05-14".into())));
/// # Ok::<(), pi_runtime::provider::RequestError>(())
/// ```
///
/// # Errors
/// [`RequestError::NotBuilt`]: the model's API is not compiled in.
pub fn request_headers(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<Vec<(String, String)>, RequestError> {
    Ok(wire_api(model.api)?.headers(model, context, options))
}

/// The implementation of `api`, if its feature is on.
pub(crate) fn wire_api(api: Api) -> Result<&'static dyn WireApi, RequestError> {
    // Used only by the arms of APIs this build leaves out.
    #[allow(unused_variables)]
    let not_built = |feature| RequestError::NotBuilt {
        api: api.as_str(),
        feature,
    };
    match api {
        #[cfg(feature = "openai")]
        Api::OpenAiCompletions => Ok(&super::openai::Completions),
        #[cfg(not(feature = "openai"))]
        Api::OpenAiCompletions => Err(not_built("openai")),
        #[cfg(feature = "openai-responses")]
        Api::OpenAiResponses => Ok(&super::openai_responses::Responses),
        #[cfg(not(feature = "openai-responses"))]
        Api::OpenAiResponses => Err(not_built("openai-responses")),
        #[cfg(feature = "anthropic")]
        Api::AnthropicMessages => Ok(&super::anthropic::Messages),
        #[cfg(not(feature = "anthropic"))]
        Api::AnthropicMessages => Err(not_built("anthropic")),
        #[cfg(feature = "google")]
        Api::GoogleGenerativeAi => Ok(&super::google::GenerateContent),
        #[cfg(not(feature = "google"))]
        Api::GoogleGenerativeAi => Err(not_built("google")),
    }
}
