//! The tool server as rmcp's `ServerHandler`: `initialize`, `tools/list`, and `tools/call`
//! run through the agent loop's dispatcher, with the caller's context, progress
//! notifications and cancellation.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock as McpContent, ErrorData,
    Implementation, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, Tool as McpTool,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler};
use serde_json::Value;

use super::McpServer;
use crate::agent::dispatch::{Dispatcher, RunLimits};
use crate::mcp::auth::Caller;
use crate::message::{ContentBlock, ToolCall};
use crate::tool::{ExecutionMode, ToolResult};

impl McpServer {
    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
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
        let principal = caller.as_ref().map(Caller::principal);
        let run_context = inner
            .context
            .as_ref()
            .map(|context| context.make(principal))
            .transpose()?;
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let call = ToolCall::new(request_id(&context), name, arguments);
        let limits = RunLimits {
            signal: context.ct.clone(),
            deadline: None,
            context: run_context,
            run_key: None,
            nested_failures: None,
            lane: inner.lane.clone(),
            time_limit: None,
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
        let result = dispatcher
            .call(&call, Arc::from(Vec::new()), |update| progress.send(update))
            .await;
        Ok(mcp_result(result, structured))
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().build();
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
        self.call(request, context).await.map(Into::into)
    }
}

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
    let content: Vec<McpContent> = result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(McpContent::text(text.text.clone())),
            ContentBlock::Image(image) => Some(McpContent::image(
                image.data.clone(),
                image.mime_type.clone(),
            )),
            _ => None,
        })
        .collect();
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
