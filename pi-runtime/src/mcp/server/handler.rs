//! The server as rmcp's `ServerHandler`: `initialize`; `tools/list`, and `tools/call` run
//! through the agent loop's dispatcher, with the caller's context, progress notifications and
//! cancellation; resources, prompts, completions and the log level. A call, a prompt or a
//! read that asks the client a question on 2026-07-28 answers with an `InputRequiredResult`.

// Sampling, roots and logging are deprecated by SEP-2577, a revision after 2026-07-28; both
// revisions served here have them.
#![allow(deprecated)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use rmcp::model::SubscriptionFilter;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    ContentBlock as McpContent, ErrorData, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, Implementation, InputRequiredResult, InputResponses, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, PromptMessage as McpPromptMessage, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Reference, ResourceContents, Role,
    ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
    Tool as McpTool, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{RoleServer, ServerHandler};
use serde_json::Value;

use super::McpServer;
use super::client::{ConnectedClient, RoundTrip};
use super::prompts::PromptRole;
use super::resources::ResourceRead;
use crate::agent::dispatch::{Dispatcher, RunLimits};
use crate::mcp::auth::Caller;
use crate::message::{ContentBlock, EmbeddedResource, ResourceBody, ToolCall};
use crate::tool::{ExecutionMode, ToolResult};

impl McpServer {
    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let inner = &self.inner;
        let name = request.name.as_ref();
        let caller = caller(&context);
        if caller.as_ref().is_some_and(|caller| !caller.allows(name)) {
            return Err(ErrorData::invalid_request(
                format!("The token may not call the tool \"{name}\""),
                None,
            ));
        }
        // A `Json<T>` output's `details` are its structured content.
        let structured = inner
            .tools
            .get(name)
            .ok_or_else(|| ErrorData::invalid_params(format!("Unknown tool: {name}"), None))?
            .tool()
            .output_schema()
            .is_some();
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let client = self.connected(
            &context,
            request.request_state.as_deref(),
            request.input_responses,
            || format!("tools/call\0{name}\0{arguments}"),
        )?;
        let principal = caller.as_ref().map(Caller::principal);
        let run_context = inner
            .context
            .as_ref()
            .map(|context| context.make(principal))
            .transpose()?;
        let call = ToolCall::new(request_id(&context), name, arguments);
        let limits = RunLimits {
            signal: context.ct.clone(),
            deadline: None,
            context: run_context,
            run_key: None,
            nested_failures: None,
            lane: inner.lane.clone(),
            time_limit: None,
            served_by: Some(Arc::new(client.clone())),
        };
        let dispatcher = Dispatcher::new(
            Arc::clone(&inner.tools),
            Arc::clone(&inner.hooks),
            Arc::clone(&inner.policies),
            ExecutionMode::Parallel,
            Arc::new(limits),
            false,
        );
        let progress = Progress::new(&context);
        let (asker, asked, ledger) = (&client, &call, inner.pause_ledger.as_ref());
        let approve = move |reason: String| async move {
            asker
                .approval(&asked.name, &asked.arguments, &reason, ledger)
                .await
        };
        let result = dispatcher
            .call_approved_by(&call, Arc::from(Vec::new()), |u| progress.send(u), approve)
            .await;
        Ok(match self.questions_left(&client)? {
            Some(input_required) => input_required.into(),
            None => mcp_result(result, structured).into(),
        })
    }

    /// The client of `context`'s request. On 2026-07-28 it answers from the answers so far:
    /// those sealed in the request's `state` with its new `responses`, for the request
    /// `request` names (its method and what it is about: a state opens for that request
    /// only).
    fn connected(
        &self,
        context: &RequestContext<RoleServer>,
        state: Option<&str>,
        responses: Option<InputResponses>,
        request: impl FnOnce() -> String,
    ) -> Result<ConnectedClient, ErrorData> {
        let stateless = context
            .protocol_version()
            .is_some_and(|version| !version.has_initialize());
        if !stateless {
            return Ok(ConnectedClient::new(
                context,
                self.session.log_level(),
                None,
            ));
        }
        let request = request();
        let opened = self
            .inner
            .request_states
            .open(state, responses, request.as_bytes())?;
        let round_trip = RoundTrip::new(request, opened.answers, opened.pause);
        Ok(ConnectedClient::new(
            context,
            context.meta.log_level(),
            Some(round_trip),
        ))
    }

    /// The questions the request asked that its answers do not cover, to go back to the
    /// client with the answers so far sealed; `None` when there are none.
    ///
    /// # Errors
    /// The request needed a feature the client did not declare: the protocol's
    /// missing-capability error, which names it.
    fn questions_left(
        &self,
        client: &ConnectedClient,
    ) -> Result<Option<InputRequiredResult>, ErrorData> {
        let Some(round_trip) = client.round_trip() else {
            return Ok(None);
        };
        if let Some(refusal) = round_trip.refusal() {
            return Err(ErrorData::invalid_params(refusal, None));
        }
        if let Some(feature) = round_trip.missing() {
            return Err(ErrorData::new(
                MISSING_CLIENT_CAPABILITY,
                format!("The client does not support {feature}, which this request needs"),
                Some(serde_json::json!({ "requiredCapabilities": { feature.name(): {} } })),
            ));
        }
        let questions = round_trip.take_unanswered();
        if questions.is_empty() {
            return Ok(None);
        }
        let state = self
            .inner
            .request_states
            .seal(round_trip.answers(), round_trip.request().as_bytes());
        Ok(Some(InputRequiredResult::new(Some(questions), Some(state))))
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let inner = &self.inner;
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_logging()
            .build();
        if !inner.resources.is_empty() || !inner.templates.is_empty() {
            capabilities.resources = ServerCapabilities::builder()
                .enable_resources()
                .enable_resources_subscribe()
                .build()
                .resources;
        }
        if !inner.prompts.is_empty() {
            capabilities.prompts = ServerCapabilities::builder()
                .enable_prompts()
                .build()
                .prompts;
        }
        if !inner.prompts.is_empty() || !inner.templates.is_empty() {
            capabilities.completions = ServerCapabilities::builder()
                .enable_completions()
                .build()
                .completions;
        }
        let mut info = ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(&self.inner.name, &self.inner.version));
        if let Some(instructions) = &self.inner.instructions {
            info = info.with_instructions(instructions.clone());
        }
        info
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let (tools, next) = self.page(
            request.and_then(|r| r.cursor).as_deref(),
            caller(&context).as_ref(),
        )?;
        let mut page = ListToolsResult::with_all_items(tools);
        page.next_cursor = next;
        Ok(page)
    }

    fn get_tool(&self, name: &str) -> Option<McpTool> {
        self.inner.listed.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.call(request, context).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resources = self.inner.resources.iter().map(|r| r.listed.clone());
        Ok(ListResourcesResult::with_all_items(resources.collect()))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let templates = self.inner.templates.iter().map(|t| t.listed.clone());
        Ok(ListResourceTemplatesResult::with_all_items(
            templates.collect(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        let client = self.connected(
            &context,
            request.request_state.as_deref(),
            request.input_responses,
            || format!("resources/read\0{uri}"),
        )?;
        let inner = &self.inner;
        let read = |variables| ResourceRead {
            uri: uri.clone(),
            variables,
            client: client.clone(),
        };
        let reading = if let Some(resource) = inner.resources.iter().find(|r| r.uri() == uri) {
            resource.read(read(serde_json::Map::new()))
        } else if let Some((template, variables)) = inner
            .templates
            .iter()
            .find_map(|t| Some((t, t.matches(&uri)?)))
        {
            template.read(read(variables))
        } else {
            return Err(ErrorData::resource_not_found(
                "Resource not found",
                Some(serde_json::json!({ "uri": uri })),
            ));
        };
        let contents = reading.await;
        if let Some(input_required) = self.questions_left(&client)? {
            return Ok(input_required.into());
        }
        let contents = contents.map_err(|error| {
            ErrorData::internal_error(format!("Reading {uri} failed: {}", error.message()), None)
        })?;
        Ok(ReadResourceResult::new(contents.iter().map(resource_contents).collect()).into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.session.subscribe(request.uri, &context.peer);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // rmcp keeps of it what the server's capabilities declare.
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let _listening = self.inner.sessions.listen(context.sink().clone());
        context.cancelled().await;
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.session.unsubscribe(&request.uri);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let prompts = self.inner.prompts.iter().map(|p| p.listed.clone());
        Ok(ListPromptsResult::with_all_items(prompts.collect()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let name = request.name;
        let prompt = self
            .inner
            .prompts
            .iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| ErrorData::invalid_params(format!("Unknown prompt: {name}"), None))?;
        let arguments = request.arguments.unwrap_or_default();
        let client = self.connected(
            &context,
            request.request_state.as_deref(),
            request.input_responses,
            || format!("prompts/get\0{name}\0{}", Value::Object(arguments.clone())),
        )?;
        let messages = prompt.get(arguments, client.clone()).await;
        if let Some(input_required) = self.questions_left(&client)? {
            return Ok(input_required.into());
        }
        let messages = messages.map_err(|error| {
            ErrorData::invalid_params(format!("Prompt {name}: {}", error.message()), None)
        })?;
        let messages = messages
            .into_iter()
            .map(|message| {
                let role = match message.role {
                    PromptRole::Assistant => Role::Assistant,
                    _ => Role::User,
                };
                let content = mcp_block(&message.content).ok_or_else(|| {
                    ErrorData::internal_error(
                        format!("Prompt {name}: a message holds reasoning or a tool call"),
                        None,
                    )
                })?;
                Ok(McpPromptMessage::new(role, content))
            })
            .collect::<Result<Vec<_>, ErrorData>>()?;
        let mut result = GetPromptResult::new(messages);
        result.description.clone_from(&prompt.listed.description);
        Ok(result.into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let argument = &request.argument;
        let completer = match &request.r#ref {
            Reference::Prompt(prompt) => self
                .inner
                .prompts
                .iter()
                .find(|p| p.name() == prompt.name)
                .and_then(|p| p.completions.get(&argument.name)),
            Reference::Resource(template) => self
                .inner
                .templates
                .iter()
                .find(|t| t.listed.uri_template == template.uri)
                .and_then(|t| t.completions.get(&argument.name)),
            _ => None,
        };
        Ok(completer.map_or_else(CompleteResult::default, |c| c.complete(&argument.value)))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.session.set_log_level(request.level);
        Ok(())
    }
}

/// The protocol's error for a request that needs a feature the client did not declare.
const MISSING_CLIENT_CAPABILITY: rmcp::model::ErrorCode = rmcp::model::ErrorCode(-32021);

/// Progress updates become `notifications/progress` when the client sent a progress token.
struct Progress {
    token: Option<rmcp::model::ProgressToken>,
    peer: rmcp::Peer<RoleServer>,
    count: AtomicU32,
}

impl Progress {
    fn new(context: &RequestContext<RoleServer>) -> Self {
        Progress {
            token: context.meta.get_progress_token(),
            peer: context.peer.clone(),
            count: AtomicU32::new(0),
        }
    }

    fn send(&self, update: ToolResult) -> impl Future<Output = ()> + Send + use<> {
        let notification = self.token.clone().map(|token| {
            let count = self.count.fetch_add(1, Ordering::Relaxed) + 1;
            let mut param = ProgressNotificationParam::new(token, f64::from(count));
            let text = update.text_content();
            if !text.is_empty() {
                param = param.with_message(text);
            }
            param
        });
        let peer = self.peer.clone();
        async move {
            if let Some(param) = notification {
                // A client that went away misses its progress; the call itself goes on.
                let _ = peer.notify_progress(param).await;
            }
        }
    }
}

/// Who sent an authenticated HTTP request, as the authentication gate left it there; `None`
/// over stdio and unauthenticated HTTP.
fn caller(context: &RequestContext<RoleServer>) -> Option<Caller> {
    context
        .extensions
        .get::<axum::http::request::Parts>()?
        .extensions
        .get::<Caller>()
        .cloned()
}

fn request_id(context: &RequestContext<RoleServer>) -> String {
    match serde_json::to_value(&context.id) {
        Ok(Value::String(id)) => id,
        Ok(other) => other.to_string(),
        Err(_) => "mcp-call".to_owned(),
    }
}

/// Our result as an MCP `CallToolResult`.
fn mcp_result(result: ToolResult, structured: bool) -> CallToolResult {
    let content: Vec<McpContent> = result.content.iter().filter_map(mcp_block).collect();
    let structured_content = match (&result.structured_content, &result.details) {
        (Some(value @ Value::Object(_)), _) => Some(value.clone()),
        (_, Some(value @ Value::Object(_))) if structured && !result.is_error => {
            Some(value.clone())
        }
        _ => None,
    };
    let mut out = if result.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    out.structured_content = structured_content;
    out
}

/// One block of our result as MCP content; reasoning and tool calls are no result's.
pub(crate) fn mcp_block(block: &ContentBlock) -> Option<McpContent> {
    Some(match block {
        ContentBlock::Text(text) => McpContent::text(text.text.clone()),
        ContentBlock::Image(image) => {
            McpContent::image(image.data.clone(), image.mime_type.clone())
        }
        ContentBlock::Audio(audio) => {
            McpContent::audio(audio.data.clone(), audio.mime_type.clone())
        }
        ContentBlock::Resource(resource) => McpContent::resource(resource_contents(resource)),
        ContentBlock::Thinking(_) | ContentBlock::ToolCall(_) => return None,
    })
}

/// An embedded resource as MCP resource contents.
fn resource_contents(resource: &EmbeddedResource) -> ResourceContents {
    let (uri, mime_type) = (resource.uri.clone(), resource.mime_type.clone());
    match &resource.body {
        ResourceBody::Text(text) => ResourceContents::TextResourceContents {
            uri,
            mime_type,
            text: text.clone(),
            meta: None,
        },
        ResourceBody::Blob(blob) => ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob: blob.clone(),
            meta: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn json_results_carry_structured_content() {
        let result = ToolResult {
            content: vec![ContentBlock::text("{\"n\":1}")],
            details: Some(json!({"n": 1})),
            ..ToolResult::default()
        };
        let structured = mcp_result(result.clone(), true);
        assert_eq!(structured.structured_content, Some(json!({"n": 1})));
        assert_eq!(structured.is_error, Some(false));
        assert_eq!(mcp_result(result, false).structured_content, None);
        let error = mcp_result(ToolResult::error("bad"), true);
        assert_eq!(
            (error.structured_content, error.is_error),
            (None, Some(true))
        );
        // A `Json<T>` result is sent as structured content, output schema or not.
        let typed =
            crate::tool::IntoToolResult::into_tool_result(crate::tool::Json(json!({"n": 1})));
        assert_eq!(
            mcp_result(typed, false).structured_content,
            Some(json!({"n": 1}))
        );
        // A tool's own structured content is sent when it is an object, never otherwise.
        let mut read = ToolResult::text("x");
        read.structured_content = Some(json!("x"));
        assert_eq!(mcp_result(read, false).structured_content, None);
    }
}
