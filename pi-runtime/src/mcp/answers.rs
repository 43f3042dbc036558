//! How an [`McpClient`](super::McpClient) answers the questions a server asks: an
//! elicitation of the user, a completion of the client's model, the client's roots. Up to
//! 2025-11-25 they come as requests on the connection; from 2026-07-28 as the
//! `inputRequests` of an `InputRequiredResult`, answered and sent back with the call
//! retried. Either way the application's answers answer them, and what it gives none for
//! is refused with a clear error (and not declared to the server).

// Sampling and roots are deprecated by SEP-2577, a revision after 2026-07-28; both revisions
// spoken here have them.
#![allow(deprecated)]

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationAction, ErrorCode, ErrorData, InputRequest, ListRootsResult, Root,
};
use serde_json::{Map, Value};

type Elicit = Arc<dyn Fn(ElicitRequestParams) -> BoxFuture<'static, ElicitResult> + Send + Sync>;
type Sample = Arc<
    dyn Fn(CreateMessageRequestParams) -> BoxFuture<'static, Result<CreateMessageResult, String>>
        + Send
        + Sync,
>;

/// What an [`McpClient`](super::McpClient) answers when its server asks
/// ([`McpClientBuilder::answers`](super::McpClientBuilder::answers)): each kind of question
/// given an answer is declared to the server as a capability; the others are not, and a
/// server that asks them anyway gets an error saying so.
///
/// ```
/// use pi_runtime::mcp::ClientAnswers;
/// use pi_runtime::mcp::model::{ElicitResult, ElicitationAction, Root};
///
/// // Accept every form with its defaults; the project directory is the one root.
/// let answers = ClientAnswers::new()
///     .elicitation(|_form| async {
///         let mut answer = ElicitResult::new(ElicitationAction::Accept);
///         answer.content = Some(serde_json::json!({}));
///         answer
///     })
///     .roots(vec![Root::new("file:///home/me/project")]);
/// # let _ = answers;
/// ```
#[derive(Clone, Default)]
pub struct ClientAnswers {
    elicit: Option<Elicit>,
    sample: Option<Sample>,
    roots: Option<Vec<Root>>,
}

impl fmt::Debug for ClientAnswers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientAnswers")
            .field("elicitation", &self.elicit.is_some())
            .field("sampling", &self.sample.is_some())
            .field("roots", &self.roots)
            .finish()
    }
}

impl ClientAnswers {
    /// No answers: the client declares no capability and refuses every question.
    pub fn new() -> Self {
        ClientAnswers::default()
    }

    /// Answer elicitations (a form or a URL for the user) with `answer`: accept with the
    /// content, decline, or cancel. An accepted form gets the defaults of the fields its
    /// content leaves out.
    #[must_use]
    pub fn elicitation<F, Fut>(mut self, answer: F) -> Self
    where
        F: Fn(ElicitRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ElicitResult> + Send + 'static,
    {
        self.elicit = Some(Arc::new(move |params| answer(params).boxed()));
        self
    }

    /// Answer sampling requests with `complete`: the client's model's message, or why there
    /// is none.
    #[must_use]
    pub fn sampling<F, Fut>(mut self, complete: F) -> Self
    where
        F: Fn(CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, String>> + Send + 'static,
    {
        self.sample = Some(Arc::new(move |params| complete(params).boxed()));
        self
    }

    /// Answer `roots/list` with `roots`.
    #[must_use]
    pub fn roots(mut self, roots: Vec<Root>) -> Self {
        self.roots = Some(roots);
        self
    }

    /// The capabilities these answers declare.
    pub(crate) fn capabilities(&self) -> ClientCapabilities {
        let mut capabilities = ClientCapabilities::default();
        if self.elicit.is_some() {
            capabilities.elicitation = ClientCapabilities::builder()
                .enable_elicitation()
                .build()
                .elicitation;
        }
        if self.sample.is_some() {
            capabilities.sampling = ClientCapabilities::builder()
                .enable_sampling()
                .build()
                .sampling;
        }
        if self.roots.is_some() {
            capabilities.roots = ClientCapabilities::builder().enable_roots().build().roots;
        }
        capabilities
    }

    /// The application's answer, with the form's defaults filling the fields an accepted
    /// answer leaves out (SEP-1034).
    pub(crate) async fn elicit(
        &self,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorData> {
        let answer = self
            .elicit
            .as_ref()
            .ok_or_else(|| unanswered("elicitation"))?;
        let defaults = form_defaults(&params);
        let mut answer = answer(params).await;
        if answer.action == ElicitationAction::Accept && !defaults.is_empty() {
            let content = answer
                .content
                .get_or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(content) = content {
                for (field, default) in defaults {
                    content.entry(field).or_insert(default);
                }
            }
        }
        Ok(answer)
    }

    pub(crate) async fn sample(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        let complete = self.sample.as_ref().ok_or_else(|| unanswered("sampling"))?;
        complete(params)
            .await
            .map_err(|reason| ErrorData::internal_error(reason, None))
    }

    pub(crate) fn list_roots(&self) -> Result<ListRootsResult, ErrorData> {
        let roots = self.roots.clone().ok_or_else(|| unanswered("roots"))?;
        Ok(ListRootsResult::new(roots))
    }

    /// The answer to one of a 2026-07-28 result's `inputRequests`, as it goes back.
    pub(crate) async fn answer(&self, question: InputRequest) -> Result<Value, ErrorData> {
        let answer = match question {
            InputRequest::Elicitation(request) => {
                serde_json::to_value(self.elicit(request.params).await?)
            }
            InputRequest::CreateMessage(request) => {
                serde_json::to_value(self.sample(request.params).await?)
            }
            InputRequest::ListRoots(_) => serde_json::to_value(self.list_roots()?),
            _ => return Err(unanswered("this kind of question")),
        };
        answer.map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }
}

/// The default of each field of a form that has one.
fn form_defaults(params: &ElicitRequestParams) -> Map<String, Value> {
    let ElicitRequestParams::FormElicitationParams {
        requested_schema, ..
    } = params
    else {
        return Map::new();
    };
    let schema = serde_json::to_value(requested_schema).unwrap_or(Value::Null);
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Map::new();
    };
    properties
        .iter()
        .filter_map(|(field, property)| Some((field.clone(), property.get("default")?.clone())))
        .collect()
}

/// The refusal of a question the application gave no answer for.
fn unanswered(what: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("this MCP client answers no {what} requests (it declared no such capability)"),
        None,
    )
}
