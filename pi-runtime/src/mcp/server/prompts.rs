//! Prompts a server serves: their arguments declared once, as a type, like a tool's.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::model::{self, PromptArgument};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::client::ConnectedClient;
use super::completion::Completer;
use crate::message::ContentBlock;
use crate::tool::ToolError;

/// What getting a prompt gives: its messages.
pub type PromptResult = Result<Vec<PromptMessage>, ToolError>;

/// One message of a prompt: who says it, and a block of text, an image, audio or an
/// embedded resource.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PromptMessage {
    /// Who says it.
    pub role: PromptRole,
    /// What it says.
    pub content: ContentBlock,
}

/// Who says a prompt's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PromptRole {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

impl PromptMessage {
    /// The user says `content`.
    pub fn user(content: ContentBlock) -> Self {
        PromptMessage {
            role: PromptRole::User,
            content,
        }
    }

    /// The assistant says `content`.
    pub fn assistant(content: ContentBlock) -> Self {
        PromptMessage {
            role: PromptRole::Assistant,
            content,
        }
    }

    /// The user says `text`.
    pub fn user_text(text: impl Into<String>) -> Self {
        PromptMessage::user(ContentBlock::text(text))
    }
}

type Get = Arc<
    dyn Fn(Map<String, Value>, ConnectedClient) -> BoxFuture<'static, PromptResult> + Send + Sync,
>;

/// A prompt template, listed in `prompts/list` and filled in by `prompts/get`.
///
/// Its arguments are the fields of a type: each field is an argument, its doc comment the
/// argument's description, and a field that is not an `Option` a required one. Clients send
/// every argument as a string.
///
/// ```
/// use pi_runtime::mcp::{Prompt, PromptMessage};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Review {
///     /// The language the code is in.
///     language: String,
///     /// What to look at most.
///     focus: Option<String>,
/// }
///
/// let review = Prompt::new("review", "Review code", |args: Review, _client| async move {
///     let focus = args.focus.unwrap_or_else(|| "correctness".to_owned());
///     let text = format!("Review this {} code for {focus}.", args.language);
///     Ok(vec![PromptMessage::user_text(text)])
/// })
/// .with_completion("language", |typed: &str| {
///     ["rust", "python"].iter().filter(|l| l.starts_with(typed)).map(|l| l.to_string()).collect()
/// });
/// # let _ = review;
/// ```
#[derive(Clone)]
pub struct Prompt {
    pub(crate) listed: model::Prompt,
    get: Get,
    pub(crate) completions: HashMap<String, Completer>,
}

impl fmt::Debug for Prompt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prompt")
            .field("name", &self.listed.name)
            .finish_non_exhaustive()
    }
}

impl Prompt {
    /// A prompt whose arguments are `A`'s fields and whose messages `get` makes from them
    /// (given the client too, to ask it questions). A prompt without arguments takes `()`.
    pub fn new<A, F, Fut>(name: impl Into<String>, description: impl Into<String>, get: F) -> Self
    where
        A: JsonSchema + DeserializeOwned + Send + 'static,
        F: Fn(A, ConnectedClient) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = PromptResult> + Send + 'static,
    {
        let get = Arc::new(get);
        let get: Get = Arc::new(move |arguments: Map<String, Value>, client| {
            match arguments_as::<A>(arguments) {
                Ok(arguments) => get(arguments, client).boxed(),
                Err(error) => std::future::ready(Err(error)).boxed(),
            }
        });
        let arguments = declared_arguments::<A>();
        let listed = model::Prompt::new(
            name,
            Some(description),
            (!arguments.is_empty()).then_some(arguments),
        );
        Prompt {
            listed,
            get,
            completions: HashMap::new(),
        }
    }

    /// A prompt without arguments that always gives `messages`.
    pub fn fixed(
        name: impl Into<String>,
        description: impl Into<String>,
        messages: Vec<PromptMessage>,
    ) -> Self {
        Prompt::new(name, description, move |(): (), _| {
            std::future::ready(Ok(messages.clone()))
        })
    }

    /// Suggest values for `argument` as a client types it (`completion/complete`):
    /// `complete` gets what was typed so far and returns candidates, best first.
    #[must_use]
    pub fn with_completion(
        mut self,
        argument: impl Into<String>,
        complete: impl Fn(&str) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.completions
            .insert(argument.into(), Completer::new(complete));
        self
    }

    pub(crate) fn name(&self) -> &str {
        &self.listed.name
    }

    pub(crate) fn get(
        &self,
        arguments: Map<String, Value>,
        client: ConnectedClient,
    ) -> BoxFuture<'static, PromptResult> {
        (self.get)(arguments, client)
    }
}

/// The arguments a client sent as `A`; no arguments at all are `()` too.
fn arguments_as<A: DeserializeOwned>(arguments: Map<String, Value>) -> Result<A, ToolError> {
    let empty = arguments.is_empty();
    serde_json::from_value(Value::Object(arguments))
        .or_else(|error| {
            if empty {
                serde_json::from_value(Value::Null).map_err(|_| error)
            } else {
                Err(error)
            }
        })
        .map_err(|error| ToolError::invalid_arguments(format!("Invalid arguments: {error}")))
}

/// `A`'s fields as prompt arguments, in declaration order.
fn declared_arguments<A: JsonSchema>() -> Vec<PromptArgument> {
    let schema = schemars::schema_for!(A);
    let schema = schema.as_value();
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| {
            let mut argument =
                PromptArgument::new(name.clone()).with_required(required.contains(&name.as_str()));
            if let Some(description) = property.get("description").and_then(Value::as_str) {
                argument = argument.with_description(description);
            }
            argument
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)] // Read through the schema only.
    struct Args {
        /// First test argument
        arg1: String,
        arg2: Option<String>,
    }

    #[test]
    fn arguments_come_from_the_type() {
        let listed = serde_json::to_value(declared_arguments::<Args>()).expect("serializes");
        assert_eq!(
            listed,
            json!([
                {"name": "arg1", "description": "First test argument", "required": true},
                {"name": "arg2", "required": false}
            ])
        );
        assert!(declared_arguments::<()>().is_empty());
        assert!(arguments_as::<()>(Map::new()).is_ok());
        let missing = arguments_as::<Args>(Map::new())
            .err()
            .expect("arg1 is required");
        assert_eq!(missing.message(), "Invalid arguments: missing field `arg1`");
    }
}
