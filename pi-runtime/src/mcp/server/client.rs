//! The client that sent a request, as the code serving it sees it: ask it a question
//! (elicitation, sampling, its roots) and log to it.
//!
//! How a question travels depends on the revision the client speaks. Up to 2025-11-25 it is a
//! request on the connection, answered while the tool waits. From 2026-07-28 the server may
//! send no requests: the call ends with an `InputRequiredResult` naming the questions, and the
//! client calls again with the answers. The tool then runs again from the start, and each
//! question it asks again is answered from what the client sent (`round_trip`).

// Sampling, roots and logging are deprecated by SEP-2577, a revision after 2026-07-28; both
// revisions served here have them.
#![allow(deprecated)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    ClientCapabilities, ClientResult, CreateMessageRequest, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationSchema, InputRequest, InputRequests, InputResponses, ListRootsRequest,
    ListRootsResult, LoggingLevel, LoggingMessageNotificationParam, ServerRequest,
};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::agent::approval::PauseLedger;
use crate::agent::dispatch::Verdict;
use crate::tool::{FromToolContext, ToolContext};

/// The key of the question that asks for a call's approval.
const APPROVAL_KEY: &str = "approval";

/// The MCP client that sent the call being served: a tool asks it questions and logs to it.
///
/// A tool served by [`McpServer`](super::McpServer) gets one as a parameter marked
/// `#[tool(extract)]`, or from its context with [`ConnectedClient::of`]. Each question has a
/// key, which names it in a 2026-07-28 `InputRequiredResult`: a tool asks the same question
/// under the same key on every run of the call.
///
/// ```
/// use pi_runtime::mcp::ConnectedClient;
/// use pi_runtime::mcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
/// use pi_runtime::{ToolError, tool};
///
/// /// Greet the user by the name they give.
/// #[tool]
/// async fn greet(#[tool(extract)] client: ConnectedClient) -> Result<String, ToolError> {
///     let schema = ElicitationSchema::builder().required_string("name").build();
///     let schema = schema.map_err(ToolError::new)?;
///     let form = ElicitRequestParams::FormElicitationParams {
///         meta: None,
///         message: "What is your name?".to_owned(),
///         requested_schema: schema,
///     };
///     // Up to 2025-11-25 this waits for the answer; on 2026-07-28 the call ends here, the
///     // question goes back to the client, and the call runs again with its answer.
///     let answer = client.elicit("user_name", form).await?;
///     Ok(match (answer.action, answer.content) {
///         (ElicitationAction::Accept, Some(content)) => format!("Hello, {}!", content["name"]),
///         _ => "Hello, stranger!".to_owned(),
///     })
/// }
/// ```
#[derive(Clone)]
pub struct ConnectedClient {
    inner: Arc<Connected>,
}

impl std::fmt::Debug for ConnectedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectedClient")
            .field("capabilities", &self.inner.capabilities)
            .field("log_level", &self.inner.log_level)
            .field("round_trip", &self.inner.round_trip.is_some())
            .finish_non_exhaustive()
    }
}

struct Connected {
    peer: Peer<RoleServer>,
    capabilities: ClientCapabilities,
    /// The least severe level the client wants; `None`: it wants no log messages.
    log_level: Option<LoggingLevel>,
    /// Set on 2026-07-28, where questions end the call and come back answered.
    round_trip: Option<RoundTrip>,
}

/// The answers a 2026-07-28 call came back with, and the questions this run asked that they
/// do not answer.
pub(crate) struct RoundTrip {
    /// The request the answers belong to (its method and what it is about), which its
    /// `requestState` is bound to.
    request: String,
    answers: InputResponses,
    /// The pause the client comes back from: the id its `requestState` carries.
    pause: Option<String>,
    /// Why the request must fail, when an answer may not be used (an approval resumed
    /// before).
    refusal: Mutex<Option<String>>,
    unanswered: Mutex<InputRequests>,
    /// A feature the call needed and the client did not declare.
    missing: Mutex<Option<ClientFeature>>,
}

impl RoundTrip {
    pub(crate) fn new(request: String, answers: InputResponses, pause: Option<String>) -> Self {
        RoundTrip {
            request,
            answers,
            pause,
            refusal: Mutex::default(),
            unanswered: Mutex::default(),
            missing: Mutex::default(),
        }
    }

    pub(crate) fn request(&self) -> &str {
        &self.request
    }

    pub(crate) fn answers(&self) -> &InputResponses {
        &self.answers
    }

    /// Why the request must fail, once the run is over.
    pub(crate) fn refusal(&self) -> Option<String> {
        self.refusal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The feature the call needed and the client did not declare, once the run is over.
    pub(crate) fn missing(&self) -> Option<ClientFeature> {
        *self.missing.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The questions left to ask, once the run is over.
    pub(crate) fn take_unanswered(&self) -> InputRequests {
        std::mem::take(
            &mut self
                .unanswered
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }
}

/// What a client declares it can answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ClientFeature {
    /// Questions to the user (`elicitation/create`).
    Elicitation,
    /// Completions by the client's model (`sampling/createMessage`).
    Sampling,
    /// Its roots (`roots/list`).
    Roots,
}

impl ClientFeature {
    /// Its name, as clients declare it.
    pub fn name(self) -> &'static str {
        match self {
            ClientFeature::Elicitation => "elicitation",
            ClientFeature::Sampling => "sampling",
            ClientFeature::Roots => "roots",
        }
    }
}

impl std::fmt::Display for ClientFeature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a question got no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AskError {
    /// The client did not declare the feature the question needs. On 2026-07-28 the request
    /// then fails with the protocol's missing-capability error.
    #[error("the MCP client does not support {0}")]
    Unsupported(ClientFeature),
    /// The question goes back to the client in an `InputRequiredResult` (2026-07-28); the
    /// call ends here and runs again with the answer. A tool returns this error as it is.
    #[error("the MCP client is asked for input; the call runs again with its answer")]
    InputRequired,
    /// The client answered with an error, or went away.
    #[error("the MCP client did not answer: {0}")]
    Failed(String),
}

/// Why a tool could not have its [`ConnectedClient`]: it was not called over MCP.
#[derive(Debug, thiserror::Error)]
#[error("The tool \"{tool}\" talks to an MCP client, and it was not called by one")]
pub struct NoConnectedClient {
    tool: String,
}

impl FromToolContext for ConnectedClient {
    type Rejection = NoConnectedClient;

    fn from_tool_context(ctx: &ToolContext, tool: &str) -> Result<Self, NoConnectedClient> {
        ConnectedClient::of(ctx).ok_or_else(|| NoConnectedClient {
            tool: tool.to_owned(),
        })
    }
}

impl ConnectedClient {
    /// The client that sent the call `ctx` belongs to; `None` outside an MCP server.
    pub fn of(ctx: &ToolContext) -> Option<ConnectedClient> {
        ctx.served_by()?.downcast_ref::<ConnectedClient>().cloned()
    }

    /// The client of the request `context`, answering from `round_trip` on 2026-07-28.
    pub(crate) fn new(
        context: &RequestContext<RoleServer>,
        log_level: Option<LoggingLevel>,
        round_trip: Option<RoundTrip>,
    ) -> Self {
        ConnectedClient {
            inner: Arc::new(Connected {
                peer: context.peer.clone(),
                capabilities: context.client_capabilities().unwrap_or_default(),
                log_level,
                round_trip,
            }),
        }
    }

    pub(crate) fn round_trip(&self) -> Option<&RoundTrip> {
        self.inner.round_trip.as_ref()
    }

    /// What the client declared it can do.
    pub fn capabilities(&self) -> &ClientCapabilities {
        &self.inner.capabilities
    }

    /// Whether the client declared `feature`.
    pub fn supports(&self, feature: ClientFeature) -> bool {
        let capabilities = &self.inner.capabilities;
        match feature {
            ClientFeature::Elicitation => capabilities.elicitation.is_some(),
            ClientFeature::Sampling => capabilities.sampling.is_some(),
            ClientFeature::Roots => capabilities.roots.is_some(),
        }
    }

    /// Go on only with a client that declared `feature`: one that did not fails the request
    /// (on 2026-07-28 with the protocol's missing-capability error, naming `feature`).
    ///
    /// # Errors
    /// [`AskError::Unsupported`]: the client did not declare it.
    pub fn require(&self, feature: ClientFeature) -> Result<(), AskError> {
        if self.supports(feature) {
            return Ok(());
        }
        if let Some(round_trip) = &self.inner.round_trip {
            *round_trip
                .missing
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(feature);
        }
        Err(AskError::Unsupported(feature))
    }

    /// Ask every question in `questions` at once; the answers come back under the same keys.
    /// On 2026-07-28 the questions not yet answered end the call ([`AskError::InputRequired`])
    /// and go to the client together.
    ///
    /// # Errors
    /// [`AskError`]: the client cannot answer one of them, or did not.
    pub async fn ask(&self, questions: InputRequests) -> Result<InputResponses, AskError> {
        for question in questions.values() {
            self.check_capability(question)?;
        }
        match &self.inner.round_trip {
            Some(round_trip) => {
                let unanswered: InputRequests = questions
                    .iter()
                    .filter(|(key, question)| !answers(question, round_trip.answers.get(*key)))
                    .map(|(key, question)| (key.clone(), question.clone()))
                    .collect();
                if !unanswered.is_empty() {
                    round_trip
                        .unanswered
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .extend(unanswered);
                    return Err(AskError::InputRequired);
                }
                Ok(questions
                    .keys()
                    .filter_map(|key| Some((key.clone(), round_trip.answers.get(key)?.clone())))
                    .collect())
            }
            None => {
                let mut answers = BTreeMap::new();
                for (key, question) in questions {
                    answers.insert(key, self.send(question).await?);
                }
                Ok(answers)
            }
        }
    }

    /// Ask the user for input: a form (its schema says what to fill in) or a URL to visit.
    ///
    /// # Errors
    /// [`AskError`]: the client does not support elicitation, or did not answer.
    pub async fn elicit(
        &self,
        key: &str,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, AskError> {
        self.ask_one(key, InputRequest::Elicitation(ElicitRequest::new(params)))
            .await
    }

    /// Ask the client's model for a completion.
    ///
    /// # Errors
    /// [`AskError`]: the client does not support sampling, or did not answer.
    pub async fn sample(
        &self,
        key: &str,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, AskError> {
        let question = InputRequest::CreateMessage(CreateMessageRequest::new(params));
        self.ask_one(key, question).await
    }

    /// Ask the client for its roots: the directories or files it lets the server work in.
    ///
    /// # Errors
    /// [`AskError`]: the client does not support roots, or did not answer.
    pub async fn roots(&self, key: &str) -> Result<ListRootsResult, AskError> {
        self.ask_one(key, InputRequest::ListRoots(ListRootsRequest::default()))
            .await
    }

    /// Send a log message at `level`, when the client asked for messages as severe: with
    /// `logging/setLevel` up to 2025-11-25, with its request's `logLevel` from 2026-07-28.
    /// A client that went away misses it; the call goes on.
    pub async fn log(&self, level: LoggingLevel, data: Value) {
        let Some(least) = self.inner.log_level else {
            return;
        };
        if severity(level) < severity(least) {
            return;
        }
        let message = LoggingMessageNotificationParam::new(level, data);
        #[allow(deprecated)] // Logging is deprecated by a later revision; 2025-11-25 has it.
        let _ = self.inner.peer.notify_logging_message(message).await;
    }

    /// Ask the user whether the call of `tool` with `arguments` may run (a form with one
    /// `approve` box), for a tool that needs approval. On 2026-07-28 the answer counts only
    /// when it comes back with the `requestState` of the question, and once: `ledger` claims
    /// that state's pause, so a state replayed after its call ran is refused.
    pub(crate) async fn approval(
        &self,
        tool: &str,
        arguments: &Value,
        reason: &str,
        ledger: &dyn PauseLedger,
    ) -> Verdict {
        let message = format!(
            "The tool \"{tool}\" needs approval ({reason}). Allow this call?\nArguments: {arguments}"
        );
        let schema = ElicitationSchema::builder()
            .required_bool_property("approve", |b| b.description("Run the call"))
            .build()
            .unwrap_or_else(|_| ElicitationSchema::new(BTreeMap::new()));
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema: schema,
        };
        let question = InputRequest::Elicitation(ElicitRequest::new(params.clone()));
        if let Some(round_trip) = &self.inner.round_trip
            && round_trip.pause.is_none()
        {
            // An answer sent before the question was asked answers nothing.
            round_trip
                .unanswered
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(APPROVAL_KEY.to_owned(), question);
            return Verdict::Unavailable;
        }
        let answer = match self.elicit(APPROVAL_KEY, params).await {
            Ok(answer) => answer,
            Err(AskError::InputRequired) => return Verdict::Unavailable,
            Err(error) => {
                return Verdict::Deny(format!("the MCP client could not be asked: {error}"));
            }
        };
        if let Some(round_trip) = &self.inner.round_trip
            && let Some(pause) = &round_trip.pause
            && let Err(error) = ledger.claim(pause).await
        {
            *round_trip
                .refusal
                .lock()
                .unwrap_or_else(PoisonError::into_inner) =
                Some(format!("The approval cannot be used: {error}"));
            return Verdict::Unavailable;
        }
        let approved =
            answer.content.as_ref().and_then(|c| c.get("approve")) == Some(&Value::Bool(true));
        match answer.action {
            ElicitationAction::Accept if approved => Verdict::Approve,
            ElicitationAction::Accept => Verdict::Deny("the user did not approve it".to_owned()),
            ElicitationAction::Decline => Verdict::Deny("the user declined".to_owned()),
            _ => Verdict::Deny("the user cancelled".to_owned()),
        }
    }

    async fn ask_one<T: DeserializeOwned>(
        &self,
        key: &str,
        question: InputRequest,
    ) -> Result<T, AskError> {
        let mut answers = self
            .ask(BTreeMap::from([(key.to_owned(), question)]))
            .await?;
        let answer = answers.remove(key).unwrap_or_default();
        serde_json::from_value(answer)
            .map_err(|e| AskError::Failed(format!("its answer to \"{key}\" is malformed: {e}")))
    }

    fn check_capability(&self, question: &InputRequest) -> Result<(), AskError> {
        self.require(match question {
            InputRequest::Elicitation(_) => ClientFeature::Elicitation,
            InputRequest::CreateMessage(_) => ClientFeature::Sampling,
            InputRequest::ListRoots(_) => ClientFeature::Roots,
            _ => return Err(AskError::Failed("an unknown kind of question".to_owned())),
        })
    }

    /// A question as a request on the connection (up to 2025-11-25).
    async fn send(&self, question: InputRequest) -> Result<Value, AskError> {
        let request = match question {
            InputRequest::Elicitation(request) => ServerRequest::ElicitRequest(request),
            InputRequest::CreateMessage(request) => ServerRequest::CreateMessageRequest(request),
            InputRequest::ListRoots(request) => ServerRequest::ListRootsRequest(request),
            _ => return Err(AskError::Failed("an unknown kind of question".to_owned())),
        };
        let answer = self
            .inner
            .peer
            .send_request(request)
            .await
            .map_err(|e| AskError::Failed(e.to_string()))?;
        let value = match answer {
            ClientResult::ElicitResult(result) => serde_json::to_value(result),
            ClientResult::CreateMessageResult(result) => serde_json::to_value(result),
            ClientResult::ListRootsResult(result) => serde_json::to_value(result),
            _ => return Err(AskError::Failed("it answered another request".to_owned())),
        };
        value.map_err(|e| AskError::Failed(e.to_string()))
    }
}

/// Whether `answer` answers `question`: a malformed answer is asked again, not trusted.
fn answers(question: &InputRequest, answer: Option<&Value>) -> bool {
    let Some(answer) = answer else {
        return false;
    };
    let answer = answer.clone();
    match question {
        InputRequest::Elicitation(_) => serde_json::from_value::<ElicitResult>(answer).is_ok(),
        InputRequest::CreateMessage(_) => {
            serde_json::from_value::<CreateMessageResult>(answer).is_ok()
        }
        InputRequest::ListRoots(_) => serde_json::from_value::<ListRootsResult>(answer).is_ok(),
        _ => false,
    }
}

/// RFC 5424 order, least severe first.
fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}
