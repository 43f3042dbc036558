//! Forcing the submit tool through the provider's `tool_choice` (SPEC §7.3, §7.5, §7.6).
//!
//! The loop sends no `tool_choice` of its own, so forcing wraps each request's model (from
//! `prepare_request`) in one that fills `StreamOptions::tool_choice` in the format of the
//! model's wire API.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use crate::stream::{AssistantEventStream, Context, LanguageModel, StreamOptions};

/// The `tool_choice` that makes a model of `api` call `tool`, when the API has one:
///
/// | api | `tool_choice` | forces |
/// |---|---|---|
/// | `openai-completions` | `{"type":"function","function":{"name":tool}}` | this tool |
/// | `openai-responses` | `{"type":"function","name":tool}` | this tool |
/// | `anthropic-messages` | `{"type":"tool","name":tool}` | this tool |
/// | `google-generative-ai` | `"any"` (`functionCallingConfig.mode: ANY`) | a call of some active tool |
/// | anything else (`faux`, a user's model) | none | nothing |
pub(super) fn tool_choice(api: &str, tool: &str) -> Option<Value> {
    match api {
        "openai-completions" => Some(json!({"type": "function", "function": {"name": tool}})),
        "openai-responses" => Some(json!({"type": "function", "name": tool})),
        "anthropic-messages" => Some(json!({"type": "tool", "name": tool})),
        // The Gemini request has no `allowedFunctionNames`: ANY is as close as it gets.
        "google-generative-ai" => Some(json!("any")),
        _ => None,
    }
}

/// A model that asks for `tool` on every request that offers it.
#[derive(Debug)]
struct Forced {
    inner: Arc<dyn LanguageModel>,
    tool: String,
}

impl LanguageModel for Forced {
    fn api(&self) -> &str {
        self.inner.api()
    }

    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn id(&self) -> &str {
        self.inner.id()
    }

    fn stream(&self, context: Context, mut options: StreamOptions) -> AssistantEventStream {
        // A choice naming a tool the request does not offer is an error on every provider.
        let offered = context.tools.iter().any(|tool| tool.name == self.tool);
        if offered && options.tool_choice.is_none() {
            options.tool_choice = tool_choice(self.inner.api(), &self.tool);
        }
        self.inner.stream(context, options)
    }
}

/// Wraps the model of each request in [`Forced`], once: within a run, `prepare_request`
/// gets back the model it returned last time, which must not be wrapped again.
#[derive(Debug)]
pub(super) struct Forcing {
    tool: String,
    last: Mutex<Option<Arc<dyn LanguageModel>>>,
}

impl Forcing {
    pub(super) fn new(tool: String) -> Self {
        Forcing {
            tool,
            last: Mutex::new(None),
        }
    }

    pub(super) fn apply(&self, model: Arc<dyn LanguageModel>) -> Arc<dyn LanguageModel> {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if last.as_ref().is_some_and(|last| Arc::ptr_eq(last, &model)) {
            return model;
        }
        let forced: Arc<dyn LanguageModel> = Arc::new(Forced {
            inner: model,
            tool: self.tool.clone(),
        });
        *last = Some(Arc::clone(&forced));
        forced
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::faux::FauxModel;

    #[test]
    fn each_api_gets_its_own_format() {
        assert_eq!(
            tool_choice("openai-completions", "submit"),
            Some(json!({"type": "function", "function": {"name": "submit"}}))
        );
        assert_eq!(
            tool_choice("openai-responses", "submit"),
            Some(json!({"type": "function", "name": "submit"}))
        );
        assert_eq!(
            tool_choice("anthropic-messages", "submit"),
            Some(json!({"type": "tool", "name": "submit"}))
        );
        assert_eq!(
            tool_choice("google-generative-ai", "submit"),
            Some(json!("any"))
        );
        assert_eq!(tool_choice("faux", "submit"), None);
    }

    #[test]
    fn a_model_is_wrapped_once() {
        let forcing = Forcing::new("submit".into());
        let model: Arc<dyn LanguageModel> = Arc::new(FauxModel::new());
        let forced = forcing.apply(Arc::clone(&model));
        assert!(!Arc::ptr_eq(&forced, &model));
        assert_eq!((forced.api(), forced.id()), ("faux", "faux-1"));
        assert!(Arc::ptr_eq(&forcing.apply(Arc::clone(&forced)), &forced));
        // Another model (a hook or `set_model` replaced it) is wrapped anew.
        let other: Arc<dyn LanguageModel> = Arc::new(FauxModel::new());
        assert!(!Arc::ptr_eq(&forcing.apply(Arc::clone(&other)), &other));
    }
}
