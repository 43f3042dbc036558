//! One MCP tool as the agent runs it: arguments out, progress in, cancellation out, the
//! result converted as pi's MCP extension converts it.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, PoisonError};

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CancelledNotification, CancelledNotificationParam, ClientNotification,
    ClientRequest, InputResponses, ProgressNotificationParam, ProgressToken, Request, RequestId,
    ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use rmcp::{Peer, RoleClient};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::connection::{ClientInner, Shared};
use super::content::{ResultOptions, convert_result};
use super::errors;
use super::listing::Listed;
use crate::message::ContentBlock;
use crate::tool::{
    AgentTool, Tool, ToolContext, ToolDefinition, ToolError, ToolResult, ToolSettings,
};

/// The most rounds of input one call may ask for (as rmcp's own helpers allow).
const MAX_INPUT_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// The text of a call stopped by the run's cancellation signal, as in the agent loop.
use crate::aborted::OPERATION_ABORTED as ABORTED;

/// One tool of an MCP server, as the agent runs it.
pub(super) struct McpTool {
    client: Arc<ClientInner>,
    definition: Tool,
    label: String,
    tool: String,
    output_schema: Value,
    /// The annotation hints of the listing (for approval policies) and the client's
    /// execution policy.
    settings: ToolSettings,
}

impl McpTool {
    /// The tool `listed` on `client`'s server; it shares the listing's compiled schema.
    pub(super) fn new(client: Arc<ClientInner>, listed: &Listed) -> Self {
        McpTool {
            definition: listed.tool.clone(),
            label: listed.definition.label.clone(),
            tool: listed.definition.tool.clone(),
            output_schema: listed.definition.output_schema.clone(),
            settings: ToolSettings::new()
                .with_hints(listed.definition.annotations.unwrap_or_default())
                .with_policy(client.policy.clone()),
            client,
        }
    }

    fn error(&self, text: String) -> ToolResult {
        ToolResult::error(text)
            .with_details(json!({"server": self.client.server, "tool": self.tool}))
    }

    async fn call(&self, params: Value, ctx: ToolContext) -> ToolResult {
        let client = &self.client;
        if ctx.is_cancelled() {
            return self.error(ABORTED.into());
        }
        if let Some(failure) = client.failure() {
            return self.error(format!(
                "MCP server {} is not connected: {failure}",
                client.server
            ));
        }
        let arguments = match params {
            Value::Object(arguments) => arguments,
            _ => serde_json::Map::new(),
        };
        let mut request = CallToolRequestParams::new(self.tool.clone()).with_arguments(arguments);
        // From 2026-07-28 a server asks its questions in an `InputRequiredResult`: the call
        // goes again with the answers, as many rounds as it takes, up to a limit.
        let mut round = 0;
        let answer = loop {
            let (answer, request_id, sent) = match self.round(request.clone(), &ctx).await {
                Ok(answered) => answered,
                Err(stopped) => return stopped,
            };
            let asked = match answer {
                Ok(ServerResult::InputRequiredResult(asked)) => asked,
                Ok(answer) => break answer,
                Err(error) => return self.failed(&error, Some(&request_id), sent),
            };
            round += 1;
            if round >= MAX_INPUT_ROUNDS {
                return self.error(format!(
                    "MCP tool {} kept asking for input: {MAX_INPUT_ROUNDS} rounds without a result",
                    self.label
                ));
            }
            let mut responses = InputResponses::new();
            for (key, question) in asked.input_requests.unwrap_or_default() {
                match client.shared.answers.answer(question).await {
                    Ok(answer) => {
                        responses.insert(key, answer);
                    }
                    Err(refused) => {
                        return self.error(format!(
                            "MCP tool {} asked for input this client cannot give: {}",
                            self.label, refused.message
                        ));
                    }
                }
            }
            request.input_responses = Some(responses);
            request.request_state = asked.request_state;
        };
        let result = match answer {
            ServerResult::CallToolResult(result) => serde_json::to_value(result),
            ServerResult::CustomResult(custom) => Ok(custom.0),
            other => serde_json::to_value(other),
        };
        let Ok(result) = result else {
            return self.error(format!(
                "MCP tool {} returned a result that cannot be read",
                self.label
            ));
        };
        let options = ResultOptions::new(client.saver.as_ref())
            .with_readable_resources(client.readable_resources);
        match convert_result(&client.server, &self.tool, &result, options) {
            Ok(result) => result,
            Err(error) => self.error(error.to_string()),
        }
    }

    /// Send the call once and wait for its answer, passing its progress on; the answer,
    /// the request's id and when it went, or the call's result when it stopped before.
    async fn round(
        &self,
        request: CallToolRequestParams,
        ctx: &ToolContext,
    ) -> Result<
        (
            Result<ServerResult, ServiceError>,
            RequestId,
            tokio::time::Instant,
        ),
        ToolResult,
    > {
        let client = &self.client;
        // Progress restarts the timeout, never past the call's total time limit: a server
        // that reports progress forever cannot hold the call for longer.
        let options = PeerRequestOptions::with_timeout(client.timeout)
            .reset_timeout_on_progress()
            .with_max_total_timeout(client.max_call_time);
        let sent = tokio::time::Instant::now();
        let handle = match client
            .peer
            .send_cancellable_request(
                ClientRequest::CallToolRequest(Request::new(request)),
                options,
            )
            .await
        {
            Ok(handle) => handle,
            Err(error) => return Err(self.failed(&error, None, sent)),
        };
        let (tx, mut rx) = mpsc::unbounded_channel();
        let token = handle.progress_token.clone();
        let _registration = Registration::new(&client.shared, token, tx);
        let id = handle.id.clone();
        let request = id.clone();
        let peer = handle.peer.clone();
        // rmcp's timers end the call (and tell the server) when it goes without an answer or
        // progress for the timeout, or runs past its total time limit.
        let mut response = std::pin::pin!(handle.await_response());
        let answer = loop {
            tokio::select! {
                biased;
                answer = &mut response => break answer,
                () = ctx.signal().cancelled() => {
                    cancel(&peer, id, ABORTED).await;
                    return Err(self.error(ABORTED.into()));
                }
                Some(progress) = rx.recv() => ctx.update(progress_update(&progress)),
            }
        };
        while let Ok(progress) = rx.try_recv() {
            ctx.update(progress_update(&progress));
        }
        Ok((answer, request, sent))
    }

    /// The result of a call that failed with `error`; `request` is its id once it was sent,
    /// at `sent`.
    fn failed(
        &self,
        error: &ServiceError,
        request: Option<&RequestId>,
        sent: tokio::time::Instant,
    ) -> ToolResult {
        let client = &self.client;
        match error {
            // rmcp says `Timeout` for both limits: the total one passed if the call ran that
            // long (when the two are equal, either describes it).
            ServiceError::Timeout { .. } if sent.elapsed() >= client.max_call_time => {
                self.error(format!(
                    "MCP tool {} exceeded its total time limit of {:.1} s",
                    self.label,
                    client.max_call_time.as_secs_f64()
                ))
            }
            ServiceError::Timeout { timeout } => self.error(format!(
                "MCP tool {} timed out: no answer or progress for {:.1} s",
                self.label,
                timeout.as_secs_f64()
            )),
            ServiceError::McpError(error) => {
                self.error(format!("MCP tool {} failed: {}", self.label, error.message))
            }
            // Over HTTP, rmcp says "transport closed" when one call's response stream broke;
            // the connection and its session stay up, and the next call goes through.
            ServiceError::TransportClosed
                if client.over_http && !client.peer.is_transport_closed() =>
            {
                let reason = request
                    .and_then(|id| client.shared.stream_failures.take(id))
                    .unwrap_or_else(|| {
                        "the server closed the response stream before answering".to_owned()
                    });
                self.error(format!("MCP tool {} failed: {reason}", self.label))
            }
            ServiceError::TransportClosed => {
                client
                    .shared
                    .fail("the server closed the connection".into());
                self.error(format!(
                    "MCP tool {} failed: {}",
                    self.label,
                    client.shared.failure().unwrap_or_default()
                ))
            }
            other => {
                let reason = errors::service(other);
                if client.peer.is_transport_closed() {
                    client.shared.fail(reason.clone());
                }
                self.error(format!("MCP tool {} failed: {reason}", self.label))
            }
        }
    }
}

/// Tell the server the request `id` is cancelled, and why.
async fn cancel(peer: &Peer<RoleClient>, id: RequestId, reason: &str) {
    let notification = CancelledNotification::new(CancelledNotificationParam::new(
        Some(id),
        Some(reason.to_owned()),
    ));
    // A server that is gone has nothing left to cancel.
    let _ = peer
        .send_notification(ClientNotification::CancelledNotification(notification))
        .await;
}

/// A progress notification as a `ToolContext` update: its message, or `progress/total`.
fn progress_update(progress: &ProgressNotificationParam) -> ToolResult {
    let text = match (&progress.message, progress.total) {
        (Some(message), _) => message.clone(),
        (None, Some(total)) => format!("{}/{}", progress.progress, total),
        (None, None) => progress.progress.to_string(),
    };
    ToolResult {
        content: vec![ContentBlock::text(text)],
        details: Some(json!({
            "progress": progress.progress,
            "total": progress.total,
            "message": progress.message,
        })),
        ..ToolResult::default()
    }
}

/// Routes one call's progress notifications while it runs.
struct Registration<'a> {
    shared: &'a Shared,
    token: ProgressToken,
}

impl<'a> Registration<'a> {
    fn new(
        shared: &'a Shared,
        token: ProgressToken,
        sender: mpsc::UnboundedSender<ProgressNotificationParam>,
    ) -> Self {
        shared
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(token.clone(), sender);
        Registration { shared, token }
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.shared
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.token);
    }
}

impl fmt::Debug for McpTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.definition.name)
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

impl AgentTool for McpTool {
    fn definition(&self) -> &Tool {
        &self.definition
    }

    fn label(&self) -> &str {
        &self.label
    }

    fn execute(
        &self,
        _call_id: String,
        params: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'_, Result<ToolResult, ToolError>> {
        Box::pin(async move { Ok(self.call(params, ctx).await) })
    }
}

impl ToolDefinition for McpTool {
    fn settings(&self) -> &ToolSettings {
        &self.settings
    }

    fn output_schema(&self) -> Option<Value> {
        Some(self.output_schema.clone())
    }

    fn render_call(&self, args: &Value) -> Option<String> {
        Some(format!("{} {}", self.label, args))
    }

    fn prompt_snippet(&self) -> Option<Cow<'_, str>> {
        None
    }
}
