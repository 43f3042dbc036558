//! The `scenario` op: one prompt through the agent loop against the faux model, with the
//! protocol's tool behaviours, hooks and turn limit (PROTOCOL.md `scenario`, pi-ref D10–D13).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::protocol::Runtime;
use pi_runtime::agent::{Agent, AgentEvent, ToolCallDecision, ToolResultPatch, TurnControl};
use pi_runtime::message::{UserContent, join_text};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::{
    AssistantMessage, ContentBlock, ExecutionMode, FnTool, Message, StopReason, Tool,
    ToolDefinition, ToolError, ToolResult,
};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::protocol::{Answer, Prepared};

/// pi-ref's faux provider streams 64 tokens of 4 characters per delta.
const CHUNK_CHARS: usize = 256;
const DEFAULT_TIMEOUT_MS: u64 = 60_000;

pub(crate) fn prepare(request: &Map<String, Value>, runtime: &Runtime) -> Result<Prepared, String> {
    let scenario = Arc::new(Scenario::parse(request)?);
    let runtime = runtime.clone();
    Ok(Box::new(move || {
        let scenario = Arc::clone(&scenario);
        runtime.block_on(async move { scenario.run().await })
    }))
}

/// A scenario request, parsed once (a bench runs it many times).
struct Scenario {
    execution: ExecutionMode,
    tools: Vec<ToolSpec>,
    before: HashMap<String, ToolCallDecision>,
    after: HashMap<String, ToolResultPatch>,
    max_turns: Option<u64>,
    prompt: String,
    system_prompt: Option<String>,
    responses: Vec<FauxResponse>,
    timeout: Duration,
}

struct ToolSpec {
    /// Built once so the compiled schema is shared by every run (pi caches it per schema).
    definition: Tool,
    mode: Option<ExecutionMode>,
    rename: Option<Vec<(String, String)>>,
    behavior: Behavior,
}

#[derive(Clone)]
enum Behavior {
    Echo {
        ms: u64,
        updates: u64,
        terminate: bool,
    },
    Fail {
        ms: u64,
        message: String,
    },
    AcceptOnce {
        ms: u64,
    },
}

impl Scenario {
    fn parse(request: &Map<String, Value>) -> Result<Self, String> {
        let execution = match request.get("toolExecution").and_then(Value::as_str) {
            None | Some("parallel") => ExecutionMode::Parallel,
            Some("sequential") => ExecutionMode::Sequential,
            Some(_) => {
                return Err(bad(
                    "`toolExecution` must be \"parallel\" or \"sequential\"",
                ));
            }
        };
        let tools = match request.get("tools") {
            None => Vec::new(),
            Some(Value::Array(tools)) => tools
                .iter()
                .enumerate()
                .map(|(index, spec)| ToolSpec::parse(index, spec))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(bad("`tools` must be an array")),
        };
        let hooks = object_field(request, "hooks")?;
        let before = object_field(&hooks, "beforeToolCall")?
            .into_iter()
            .map(|(name, spec)| Ok((name, block_decision(&spec)?)))
            .collect::<Result<_, String>>()?;
        let after = object_field(&hooks, "afterToolCall")?
            .into_iter()
            .map(|(name, spec)| Ok((name, patch(&spec)?)))
            .collect::<Result<_, String>>()?;
        let max_turns = match request.get("maxTurns") {
            None | Some(Value::Null) => None,
            Some(value) => Some(
                value
                    .as_u64()
                    .ok_or_else(|| bad("`maxTurns` must be a non-negative integer"))?,
            ),
        };
        let responses = match request.get("responses") {
            None => Vec::new(),
            Some(Value::Array(responses)) => responses
                .iter()
                .enumerate()
                .map(|(index, response)| scripted_response(index, response))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(bad("`responses` must be an array")),
        };
        let timeout_ms = request
            .get("timeoutMs")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_TIMEOUT_MS);
        Ok(Scenario {
            execution,
            tools,
            before,
            after,
            max_turns,
            prompt: request
                .get("prompt")
                .and_then(Value::as_str)
                .unwrap_or("go")
                .to_owned(),
            system_prompt: request
                .get("systemPrompt")
                .and_then(Value::as_str)
                .map(str::to_owned),
            responses,
            timeout: Duration::from_millis(timeout_ms),
        })
    }

    /// One fresh agent run: new tools, model and agent; every event recorded.
    async fn run(&self) -> Answer {
        let agent = match self.agent() {
            Ok(agent) => agent,
            Err(error) => return Answer::Err(error),
        };
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&events);
        agent.on_event(move |event| {
            if let Some(reduced) = reduce_event(event) {
                sink.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(reduced);
            }
        });
        let messages =
            match tokio::time::timeout(self.timeout, agent.prompt(self.prompt.as_str())).await {
                Ok(Ok(messages)) => messages,
                Ok(Err(error)) => return Answer::Err(error.to_string()),
                Err(_) => {
                    agent.abort();
                    return Answer::Err("scenario timed out".to_owned());
                }
            };
        let events = std::mem::take(&mut *events.lock().unwrap_or_else(PoisonError::into_inner));
        let messages = messages.iter().map(reduce_message).collect();
        Answer::Typed(Box::new(Reduced { events, messages }))
    }

    fn agent(&self) -> Result<Agent, String> {
        let model = self.responses.iter().cloned().fold(
            FauxModel::new().with_chunk_chars(CHUNK_CHARS),
            FauxModel::respond,
        );
        let tools: Vec<Arc<dyn ToolDefinition>> = self.tools.iter().map(ToolSpec::build).collect();
        let mut builder = Agent::builder()
            .model(model)
            .tools(tools)
            .tool_execution(self.execution)
            .without_tool_section();
        if let Some(prompt) = &self.system_prompt {
            builder = builder.system_prompt(prompt.as_str());
        }
        if !self.before.is_empty() {
            let before = Arc::new(self.before.clone());
            builder = builder.before_tool_call(move |call| {
                let decision = before
                    .get(&call.tool_call.name)
                    .cloned()
                    .unwrap_or_default();
                std::future::ready(Ok(decision))
            });
        }
        if !self.after.is_empty() {
            let after = Arc::new(self.after.clone());
            builder = builder.after_tool_call(move |call| {
                let patch = after.get(&call.tool_call.name).cloned().unwrap_or_default();
                std::future::ready(Ok(patch))
            });
        }
        if let Some(max_turns) = self.max_turns {
            let turns = AtomicU64::new(0);
            builder = builder.finish_turn(move |_| {
                let finished = turns.fetch_add(1, Ordering::Relaxed) + 1;
                std::future::ready(if finished >= max_turns {
                    TurnControl::End
                } else {
                    TurnControl::Proceed
                })
            });
        }
        builder.build().map_err(|error| error.to_string())
    }
}

impl ToolSpec {
    fn parse(index: usize, spec: &Value) -> Result<Self, String> {
        let spec = spec
            .as_object()
            .ok_or_else(|| bad(&format!("tools[{index}] must be an object")))?;
        let name = spec
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| bad(&format!("tools[{index}].name must be a string")))?;
        let description = spec
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("");
        let schema = spec
            .get("schema")
            .or_else(|| spec.get("parameters"))
            .cloned()
            .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
        let mut definition = Tool::new(name, description, schema);
        // `false` means the same as absent (SPEC §1.1).
        if let Some(sampling) = spec
            .get("constrainedSampling")
            .filter(|v| !v.is_null() && **v != Value::Bool(false))
        {
            let sampling = serde_json::from_value(sampling.clone())
                .map_err(|error| bad(&format!("tools[{index}].constrainedSampling: {error}")))?;
            definition = definition.with_constrained_sampling(sampling);
        }
        let mode = match spec.get("executionMode").and_then(Value::as_str) {
            None => None,
            Some("parallel") => Some(ExecutionMode::Parallel),
            Some("sequential") => Some(ExecutionMode::Sequential),
            Some(other) => return Err(format!("executionMode {other:?} is not supported")),
        };
        let rename = match spec.get("prepareArguments") {
            None | Some(Value::Null) => None,
            Some(shim) => {
                let rename = shim
                    .get("rename")
                    .and_then(Value::as_object)
                    .filter(|_| shim.as_object().is_some_and(|o| o.len() == 1))
                    .ok_or_else(|| {
                        format!("tools[{index}].prepareArguments: only {{\"rename\": {{...}}}} is supported")
                    })?;
                let pairs = rename
                    .iter()
                    .map(|(old, new)| {
                        new.as_str()
                            .map(|new| (old.clone(), new.to_owned()))
                            .ok_or_else(|| bad("prepareArguments.rename values must be strings"))
                    })
                    .collect::<Result<_, _>>()?;
                Some(pairs)
            }
        };
        let behavior = Behavior::parse(index, spec.get("behavior"))?;
        Ok(ToolSpec {
            definition,
            mode,
            rename,
            behavior,
        })
    }

    fn build(&self) -> Arc<dyn ToolDefinition> {
        let behavior = self.behavior.clone();
        let accepted = Arc::new(AtomicBool::new(false));
        let mut tool = FnTool::from_definition(self.definition.clone(), move |args, ctx| {
            let behavior = behavior.clone();
            let accepted = Arc::clone(&accepted);
            async move { behavior.execute(args, ctx, &accepted).await }
        });
        if let Some(mode) = self.mode {
            tool = tool.with_mode(mode);
        }
        if let Some(rename) = self.rename.clone() {
            tool = tool.with_prepare(move |raw| Ok(rename_keys(raw, &rename)));
        }
        Arc::new(tool)
    }
}

impl Behavior {
    fn parse(index: usize, spec: Option<&Value>) -> Result<Self, String> {
        let spec = spec
            .and_then(Value::as_object)
            .ok_or_else(|| bad(&format!("tools[{index}].behavior must be an object")))?;
        let ms = spec.get("ms").and_then(Value::as_u64).unwrap_or(0);
        match spec.get("kind").and_then(Value::as_str) {
            Some("echo") => Ok(Behavior::Echo {
                ms,
                updates: spec.get("updates").and_then(Value::as_u64).unwrap_or(0),
                terminate: spec.get("terminate") == Some(&Value::Bool(true)),
            }),
            Some("fail") => Ok(Behavior::Fail {
                ms,
                message: spec
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("failed")
                    .to_owned(),
            }),
            Some("accept_once") => Ok(Behavior::AcceptOnce { ms }),
            other => Err(format!("tool behavior kind {other:?} is not supported")),
        }
    }

    async fn execute(
        self,
        args: Value,
        ctx: pi_runtime::ToolContext,
        accepted: &AtomicBool,
    ) -> Result<ToolResult, ToolError> {
        match self {
            Behavior::Echo {
                ms,
                updates,
                terminate,
            } => {
                sleep(ms).await;
                for n in 1..=updates {
                    ctx.update(ToolResult::text(format!("update {n}")));
                }
                Ok(ToolResult::text(args.to_string())
                    .with_details(args)
                    .with_terminate(terminate))
            }
            Behavior::Fail { ms, message } => {
                sleep(ms).await;
                Err(ToolError::new(message))
            }
            Behavior::AcceptOnce { ms } => {
                // The decision is made when the call starts; the sleep comes after (D12).
                let first = !accepted.swap(true, Ordering::SeqCst);
                sleep(ms).await;
                if first {
                    Ok(ToolResult::text("accepted")
                        .with_details(json!({"accepted": true}))
                        .with_terminate(true))
                } else {
                    Err(ToolError::new("already accepted"))
                }
            }
        }
    }
}

async fn sleep(ms: u64) {
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

/// The seed's `filePath` -> `path` shim (D12): each old key present is renamed in place; if
/// the new key is already there, its value wins and the old key is dropped.
fn rename_keys(raw: &Value, rename: &[(String, String)]) -> Option<Value> {
    let object = raw.as_object()?;
    let new_name = |key: &str| {
        rename
            .iter()
            .find(|(old, _)| old == key)
            .map(|(_, new)| new.as_str())
    };
    if !object.keys().any(|key| new_name(key).is_some()) {
        return None;
    }
    let mut renamed = Map::with_capacity(object.len());
    for (key, value) in object {
        match new_name(key) {
            Some(new) if object.contains_key(new) => {}
            Some(new) => {
                renamed.insert(new.to_owned(), value.clone());
            }
            None => {
                renamed.insert(key.clone(), value.clone());
            }
        }
    }
    Some(Value::Object(renamed))
}

/// A `beforeToolCall` entry (D13): block unless `"block": false`.
fn block_decision(spec: &Value) -> Result<ToolCallDecision, String> {
    let spec = spec
        .as_object()
        .ok_or_else(|| bad("hooks.beforeToolCall entries must be objects"))?;
    if spec.get("block") == Some(&Value::Bool(false)) {
        return Ok(ToolCallDecision::Allow);
    }
    Ok(ToolCallDecision::Block {
        reason: spec
            .get("reason")
            .and_then(Value::as_str)
            .map(str::to_owned),
        terminate: spec.get("terminate") == Some(&Value::Bool(true)),
    })
}

/// An `afterToolCall` entry (D13): the fields it has among content, details, isError,
/// terminate.
fn patch(spec: &Value) -> Result<ToolResultPatch, String> {
    let spec = spec
        .as_object()
        .ok_or_else(|| bad("hooks.afterToolCall entries must be objects"))?;
    let content = match spec.get("content") {
        None | Some(Value::Null) => None,
        Some(content) => Some(
            serde_json::from_value::<Vec<ContentBlock>>(content.clone())
                .map_err(|error| bad(&format!("afterToolCall content: {error}")))?,
        ),
    };
    let mut patch = ToolResultPatch::default();
    patch.content = content;
    patch.details = spec.get("details").filter(|v| !v.is_null()).cloned();
    patch.is_error = spec.get("isError").and_then(Value::as_bool);
    patch.terminate = spec.get("terminate").and_then(Value::as_bool);
    Ok(patch)
}

/// A scripted response (D10): content passed through; stop reason defaults to `toolUse`
/// with a tool call, else `stop`; `"errorMessage": null` means none.
fn scripted_response(index: usize, response: &Value) -> Result<FauxResponse, String> {
    let response = response
        .as_object()
        .ok_or_else(|| bad(&format!("responses[{index}] must be an object")))?;
    let content = match response.get("content") {
        None => Vec::new(),
        Some(content) => serde_json::from_value::<Vec<ContentBlock>>(content.clone())
            .map_err(|error| bad(&format!("responses[{index}].content: {error}")))?,
    };
    let mut scripted = FauxResponse::new(content);
    let stop_reason = match response.get("stopReason") {
        None | Some(Value::Null) => None,
        Some(reason) => Some(
            serde_json::from_value::<StopReason>(reason.clone())
                .map_err(|error| bad(&format!("responses[{index}].stopReason: {error}")))?,
        ),
    };
    if let Some(reason) = stop_reason {
        scripted = scripted.with_stop_reason(reason);
    }
    if let Some(message) = response.get("errorMessage").and_then(Value::as_str) {
        scripted = scripted.with_error(stop_reason.unwrap_or(StopReason::Error), message);
    }
    Ok(scripted)
}

/// The scenario's answer (D11): the reduced events and the run's messages.
#[derive(Serialize)]
struct Reduced {
    events: Vec<EventShown>,
    messages: Vec<MessageShown>,
}

/// An event as the protocol shows it (D11). Typed rather than a JSON map: it is built for
/// every event inside the timed run, as pi-ref builds a plain object.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EventShown {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    is_error: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_results: Option<Vec<String>>,
}

/// `message_update` is left out.
fn reduce_event(event: &AgentEvent) -> Option<EventShown> {
    let mut shown = EventShown {
        kind: event.kind(),
        role: None,
        tool_call_id: None,
        tool_name: None,
        is_error: None,
        text: None,
        tool_results: None,
    };
    match event {
        AgentEvent::MessageStart { message } | AgentEvent::MessageEnd { message } => {
            shown.role = Some(message.role());
        }
        AgentEvent::MessageUpdate { .. } => return None,
        AgentEvent::ToolExecutionStart {
            tool_call_id,
            tool_name,
            ..
        } => {
            shown.tool_call_id = Some(tool_call_id.clone());
            shown.tool_name = Some(tool_name.clone());
        }
        AgentEvent::ToolExecutionUpdate {
            tool_call_id,
            partial_result,
            ..
        } => {
            shown.tool_call_id = Some(tool_call_id.clone());
            shown.text = Some(partial_result.text_content());
        }
        AgentEvent::ToolExecutionEnd {
            tool_call_id,
            tool_name,
            result,
            is_error,
            ..
        } => {
            shown.tool_call_id = Some(tool_call_id.clone());
            shown.tool_name = Some(tool_name.clone());
            shown.is_error = Some(*is_error);
            shown.text = Some(result.text_content());
        }
        AgentEvent::TurnEnd { tool_results, .. } => {
            let ids = tool_results
                .iter()
                .map(|r| r.tool_call_id.clone())
                .collect();
            shown.tool_results = Some(ids);
        }
        _ => {}
    }
    Some(shown)
}

/// A run message as the protocol shows it (D11).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MessageShown {
    role: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    /// The calls of an assistant message, read from the message itself (pi-ref's reduced
    /// message refers to the same arguments objects).
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<CallsShown>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop_reason: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    is_error: Option<bool>,
}

struct CallsShown(Arc<AssistantMessage>);

impl Serialize for CallsShown {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Call<'a> {
            id: &'a str,
            name: &'a str,
            arguments: &'a Value,
        }
        serializer.collect_seq(self.0.tool_calls().map(|call| Call {
            id: &call.id,
            name: &call.name,
            arguments: &call.arguments,
        }))
    }
}

fn reduce_message(message: &Message) -> MessageShown {
    let mut shown = MessageShown {
        role: message.role(),
        text: None,
        tool_calls: None,
        stop_reason: None,
        tool_call_id: None,
        is_error: None,
    };
    match message {
        Message::User(user) => match &user.content {
            UserContent::Text(text) => shown.text = Some(text.clone()),
            UserContent::Blocks(blocks) => shown.text = text_of(blocks),
            _ => {}
        },
        Message::Assistant(assistant) => {
            shown.text = text_of(&assistant.content);
            if assistant.tool_calls().next().is_some() {
                shown.tool_calls = Some(CallsShown(Arc::clone(assistant)));
            }
            shown.stop_reason = Some(assistant.stop_reason.as_str());
        }
        Message::ToolResult(result) => {
            shown.text = text_of(&result.content);
            shown.tool_call_id = Some(result.tool_call_id.clone());
            shown.is_error = Some(result.is_error);
        }
        // A role this runner does not know yet: shown by its role only.
        _ => {}
    }
    shown
}

/// `text` only when there is at least one text block.
fn text_of(blocks: &[ContentBlock]) -> Option<String> {
    blocks
        .iter()
        .any(|block| block.as_text().is_some())
        .then(|| join_text(blocks))
}

fn object_field(request: &Map<String, Value>, key: &str) -> Result<Map<String, Value>, String> {
    match request.get(key) {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(object)) => Ok(object.clone()),
        Some(_) => Err(bad(&format!("`{key}` must be an object"))),
    }
}

fn bad(what: &str) -> String {
    format!("bad request: {what}")
}
