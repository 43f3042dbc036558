//! The `codemode_run` op: one call of the codemode tool in an agent whose callable tools are
//! the request's scripted tools, on the faux model; nested calls go through the agent's
//! pipeline with the request's hooks.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use pi_runtime::agent::{Agent, ToolCallDecision, ToolResultPatch};
use pi_runtime::codemode::{
    CodemodeStore, CodemodeTool, Namespace, OutputFiles, Sandbox, SandboxOutput,
};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::tool::Exposure;
use pi_runtime::{
    ContentBlock, ExecutionMode, FnTool, Message, ToolDefinition, ToolError, ToolResult,
};
use serde_json::{Map, Value, json};

use crate::protocol::{Answer, Prepared, Runtime, str_field};

const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// One scripted tool.
#[derive(Clone)]
struct ScriptedTool {
    name: String,
    description: String,
    parameters: Value,
    output_schema: Option<Value>,
    sequential: bool,
    guidelines: Vec<String>,
    namespace: Option<Namespace>,
    results: Vec<Value>,
}

struct Request {
    code: String,
    tools: Vec<ScriptedTool>,
    store: Map<String, Value>,
    execution: ExecutionMode,
    call_id: String,
    before: HashMap<String, ToolCallDecision>,
    after: HashMap<String, ToolResultPatch>,
    save_error: Option<String>,
    raw_stacks: bool,
}

pub(crate) fn prepare(request: &Map<String, Value>, runtime: &Runtime) -> Result<Prepared, String> {
    if request.get("sandbox").and_then(Value::as_str) == Some("inline") {
        return prepare_inline(request, runtime);
    }
    let request = Arc::new(parse(request)?);
    let runtime = Arc::clone(runtime);
    Ok(Box::new(move || {
        let request = Arc::clone(&request);
        runtime.block_on(async move { run(&request).await })
    }))
}

fn parse(request: &Map<String, Value>) -> Result<Request, String> {
    let code = str_field(request, "code")?.to_owned();
    let tools = match request.get("tools") {
        None => Vec::new(),
        Some(Value::Array(tools)) => tools.iter().map(parse_tool).collect::<Result<_, _>>()?,
        Some(_) => return Err("bad request: `tools` must be an array".to_owned()),
    };
    let execution = match request.get("toolExecution").and_then(Value::as_str) {
        None | Some("parallel") => ExecutionMode::Parallel,
        Some("sequential") => ExecutionMode::Sequential,
        Some(other) => return Err(format!("bad request: toolExecution {other:?}")),
    };
    let object = |key: &str| match request.get(key) {
        Some(Value::Object(map)) => map.clone(),
        _ => Map::new(),
    };
    let hooks = object("hooks");
    let section = |key: &str| match hooks.get(key) {
        Some(Value::Object(map)) => map.clone(),
        _ => Map::new(),
    };
    let before = section("beforeToolCall")
        .into_iter()
        .map(|(name, spec)| {
            let reason = spec
                .get("reason")
                .and_then(Value::as_str)
                .map(str::to_owned);
            (
                name,
                ToolCallDecision::Block {
                    reason,
                    terminate: false,
                },
            )
        })
        .collect();
    let after = section("afterToolCall")
        .into_iter()
        .map(|(name, spec)| Ok((name, patch(&spec)?)))
        .collect::<Result<_, String>>()?;
    Ok(Request {
        code,
        tools,
        store: object("store"),
        execution,
        call_id: request
            .get("toolCallId")
            .and_then(Value::as_str)
            .unwrap_or("call_1")
            .to_owned(),
        before,
        after,
        save_error: request
            .get("saveError")
            .and_then(Value::as_str)
            .map(str::to_owned),
        raw_stacks: request.get("rawStacks") == Some(&Value::Bool(true)),
    })
}

fn parse_tool(spec: &Value) -> Result<ScriptedTool, String> {
    let name = spec
        .get("name")
        .and_then(Value::as_str)
        .ok_or("bad request: a tool needs a string `name`")?;
    let strings = |key: &str| -> Vec<String> {
        spec.get(key)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    Ok(ScriptedTool {
        name: name.to_owned(),
        description: spec
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        parameters: spec
            .get("parameters")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
        output_schema: spec.get("outputSchema").cloned(),
        sequential: spec.get("executionMode").and_then(Value::as_str) == Some("sequential"),
        guidelines: strings("promptGuidelines"),
        namespace: spec.get("namespace").map(|namespace| {
            let text = |key: &str| {
                namespace
                    .get(key)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned()
            };
            Namespace {
                name: text("name"),
                description: text("description"),
                instructions: text("instructions"),
                aliases: namespace
                    .get("aliases")
                    .and_then(Value::as_array)
                    .map(|aliases| {
                        aliases
                            .iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        }),
        results: spec
            .get("results")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
    })
}

/// An `afterToolCall` entry: the fields it has among content, details, isError,
/// structuredContent.
fn patch(spec: &Value) -> Result<ToolResultPatch, String> {
    let mut patch = ToolResultPatch::default();
    if let Some(content) = spec.get("content").filter(|v| !v.is_null()) {
        patch.content = Some(
            serde_json::from_value::<Vec<ContentBlock>>(content.clone())
                .map_err(|error| format!("bad request: afterToolCall content: {error}"))?,
        );
    }
    patch.details = spec.get("details").filter(|v| !v.is_null()).cloned();
    patch.is_error = spec.get("isError").and_then(Value::as_bool);
    patch.structured_content = spec
        .get("structuredContent")
        .filter(|v| !v.is_null())
        .cloned();
    Ok(patch)
}

/// Saved files answered as `<saved>/<k><ext>`, or the request's save error.
struct SavedFiles {
    saved: AtomicU64,
    error: Option<String>,
}

impl OutputFiles for SavedFiles {
    fn save(&self, extension: &str, _bytes: &[u8]) -> Result<String, String> {
        if let Some(error) = &self.error {
            return Err(error.clone());
        }
        let k = self.saved.fetch_add(1, Ordering::Relaxed) + 1;
        Ok(format!("<saved>/{k}{extension}"))
    }
}

type Received = Arc<Mutex<Vec<Value>>>;

fn scripted(tool: &ScriptedTool, received: &Received) -> Arc<dyn ToolDefinition> {
    let results = Arc::new(Mutex::new(tool.results.clone().into_iter()));
    let received = Arc::clone(received);
    let name = tool.name.clone();
    let mut built = FnTool::new(
        tool.name.clone(),
        tool.description.clone(),
        tool.parameters.clone(),
        move |arguments, _ctx| {
            received
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(json!({"name": name, "arguments": arguments}));
            let next = results
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .next();
            let name = name.clone();
            async move { scripted_result(&name, next).await }
        },
    )
    .with_guidelines(tool.guidelines.clone())
    .with_exposure(Exposure::Codemode);
    if let Some(schema) = &tool.output_schema {
        built = built.with_output_schema(schema.clone());
    }
    if tool.sequential {
        built = built.with_mode(ExecutionMode::Sequential);
    }
    Arc::new(built)
}

async fn scripted_result(name: &str, next: Option<Value>) -> Result<ToolResult, ToolError> {
    let Some(next) = next else {
        return Err(ToolError::new(format!(
            "pi-ref: no scripted result left for {name}"
        )));
    };
    if let Some(ms) = next.get("ms").and_then(Value::as_u64) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    match &next {
        Value::String(text) => Ok(ToolResult::text(text.clone())),
        Value::Object(spec) => {
            if let Some(message) = spec.get("throw").and_then(Value::as_str) {
                return Err(ToolError::new(message));
            }
            let content = match spec.get("content") {
                Some(content) => serde_json::from_value::<Vec<ContentBlock>>(content.clone())
                    .map_err(|error| ToolError::new(format!("pi-ref: bad content: {error}")))?,
                None => Vec::new(),
            };
            let mut result = ToolResult::new(content)
                .with_is_error(spec.get("isError") == Some(&Value::Bool(true)));
            if let Some(structured) = spec.get("structuredContent") {
                result = result.with_structured_content(structured.clone());
            }
            if let Some(details) = spec.get("details") {
                result = result.with_details(details.clone());
            }
            Ok(result)
        }
        other => Err(ToolError::new(format!(
            "pi-ref: bad scripted result {other}"
        ))),
    }
}

async fn run(request: &Request) -> Answer {
    let received: Received = Arc::default();
    let store = CodemodeStore::new();
    for (key, value) in &request.store {
        store.insert(key.clone(), value.clone());
    }
    let mut codemode = CodemodeTool::new()
        .with_store(store.clone())
        .with_tool_execution(request.execution)
        .with_output_files(SavedFiles {
            saved: AtomicU64::new(0),
            error: request.save_error.clone(),
        });
    for tool in &request.tools {
        if let Some(namespace) = &tool.namespace {
            codemode = codemode.with_namespace(tool.name.clone(), namespace.clone());
        }
    }
    let mut tools: Vec<Arc<dyn ToolDefinition>> = request
        .tools
        .iter()
        .map(|tool| scripted(tool, &received))
        .collect();
    tools.push(Arc::new(codemode));
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call(
            request.call_id.clone(),
            "codemode",
            json!({"code": request.code}),
        ))
        .respond(FauxResponse::text("done"));
    let mut builder = Agent::builder()
        .model(model)
        .tools(tools)
        .tool_execution(request.execution)
        .without_tool_section();
    if !request.before.is_empty() {
        let before = Arc::new(request.before.clone());
        builder = builder.before_tool_call(move |call| {
            let decision = before
                .get(&call.tool_call.name)
                .cloned()
                .unwrap_or_default();
            std::future::ready(Ok(decision))
        });
    }
    if !request.after.is_empty() {
        let after = Arc::new(request.after.clone());
        builder = builder.after_tool_call(move |call| {
            let patch = after.get(&call.tool_call.name).cloned().unwrap_or_default();
            std::future::ready(Ok(patch))
        });
    }
    let agent = match builder.build() {
        Ok(agent) => agent,
        Err(error) => return Answer::Err(error.to_string()),
    };
    let entries_before = store.entries().len();
    let messages = match tokio::time::timeout(RUN_TIMEOUT, agent.prompt("go")).await {
        Ok(Ok(messages)) => messages,
        Ok(Err(error)) => return Answer::Err(error.to_string()),
        Err(_) => {
            agent.abort();
            return Answer::Err("codemode_run timed out".to_owned());
        }
    };
    let Some(result) = messages.iter().find_map(|message| match message {
        Message::ToolResult(result) if result.tool_call_id == request.call_id => Some(result),
        _ => None,
    }) else {
        return Answer::Err("runner: the codemode call has no result".to_owned());
    };
    // A failure before the script ran (an invalid options line) has no call records.
    let has_calls = result
        .details
        .as_ref()
        .is_some_and(|details| details.get("calls").is_some());
    if result.is_error && !has_calls {
        return Answer::Err(pi_runtime::message::join_text(&result.content));
    }
    let content: Vec<Value> = result
        .content
        .iter()
        .enumerate()
        .map(|(index, block)| shown_block(index, block, request.raw_stacks))
        .collect();
    let mut answer = json!({
        "content": content,
        "details": result.details.clone().unwrap_or(Value::Null),
    });
    if result.is_error {
        answer["isError"] = Value::Bool(true);
    }
    if let Some(entry) = store.entries().get(entries_before) {
        answer["store"] = json!({"set": entry.set, "delete": entry.delete});
    }
    answer["received"] = Value::Array(std::mem::take(
        &mut *received.lock().unwrap_or_else(PoisonError::into_inner),
    ));
    Answer::Ok(answer)
}

/// A content block as answered: the header's wall time written `<wall>`, and stack frame
/// lines removed.
fn shown_block(index: usize, block: &ContentBlock, raw_stacks: bool) -> Value {
    let mut json = serde_json::to_value(block).unwrap_or(Value::Null);
    if let Some(Value::String(text)) = json.get_mut("text") {
        if index == 0 {
            *text = wall_written(text);
        }
        if !raw_stacks {
            *text = without_stack_frames(text);
        }
    }
    json
}

fn wall_written(header: &str) -> String {
    let Some(start) = header.find("Wall time ") else {
        return header.to_owned();
    };
    let from = start + "Wall time ".len();
    let Some(end) = header[from..].find(" seconds") else {
        return header.to_owned();
    };
    format!("{}<wall>{}", &header[..from], &header[from + end..])
}

/// Lines `    at ...` removed.
fn without_stack_frames(text: &str) -> String {
    if !text.contains("\n    at ") {
        return text.to_owned();
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let kept: Vec<&str> = lines
        .iter()
        .enumerate()
        .filter(|(index, line)| *index == 0 || !line.starts_with("    at "))
        .map(|(_, line)| *line)
        .collect();
    kept.join("\n")
}

/// `"sandbox": "inline"`: the sandbox on its own, tools returning script values.
fn prepare_inline(request: &Map<String, Value>, runtime: &Runtime) -> Result<Prepared, String> {
    let request = parse(request).map(|parsed| (parsed, request.clone()))?;
    let (parsed, raw) = request;
    let runtime = Arc::clone(runtime);
    let budget = raw.get("interruptBudget").and_then(Value::as_u64);
    let timeout = raw.get("timeoutMs").and_then(Value::as_u64);
    let parsed = Arc::new(parsed);
    Ok(Box::new(move || {
        let received: Received = Arc::default();
        let mut sandbox = Sandbox::new().with_store(parsed.store.clone());
        if let Some(budget) = budget {
            sandbox = sandbox.with_interrupt_budget(budget);
        }
        if let Some(ms) = timeout {
            sandbox = sandbox.with_timeout_ms(ms);
        }
        for tool in &parsed.tools {
            let results = Arc::new(Mutex::new(tool.results.clone().into_iter()));
            let received = Arc::clone(&received);
            let name = tool.name.clone();
            sandbox = sandbox.tool(tool.name.clone(), tool.description.clone(), move |args| {
                received
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(json!({"name": name, "arguments": args}));
                let next = results
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .next();
                let name = name.clone();
                async move {
                    match next {
                        Some(Value::String(text)) => Ok(Some(Value::String(text))),
                        Some(Value::Object(spec)) => {
                            match spec.get("throw").and_then(Value::as_str) {
                                Some(message) => Err(message.to_owned()),
                                None => Ok(spec.get("value").cloned()),
                            }
                        }
                        _ => Err(format!("pi-ref: no scripted result left for {name}")),
                    }
                }
            });
        }
        let code = parsed.code.clone();
        let raw_stacks = parsed.raw_stacks;
        let result = runtime.block_on(async move { sandbox.execute(&code).await });
        let output: Vec<Value> = result
            .output
            .iter()
            .map(|item| match item {
                SandboxOutput::Text {
                    text,
                    console: true,
                } => {
                    json!({"type": "text", "text": text, "console": true})
                }
                SandboxOutput::Text { text, .. } => json!({"type": "text", "text": text}),
                SandboxOutput::Image { data, mime_type } => {
                    json!({"type": "image", "data": data, "mimeType": mime_type})
                }
                _ => Value::Null,
            })
            .collect();
        let calls: Vec<Value> = result
            .calls
            .iter()
            .map(|(name, status)| json!({"name": name, "status": status}))
            .collect();
        let mut answer = json!({"ok": result.value.is_ok()});
        if let Ok(Some(value)) = &result.value {
            answer["value"] = value.clone();
        }
        answer["output"] = Value::Array(output);
        answer["calls"] = Value::Array(calls);
        if let Some(writes) = &result.store_writes {
            answer["storeWrites"] = json!({"set": writes.set, "delete": writes.delete});
        }
        if let Err(error) = &result.value {
            let mut shown = json!({"kind": error.kind.as_str()});
            if let Some(name) = &error.name {
                shown["name"] = Value::String(name.clone());
            }
            shown["message"] = Value::String(error.message.clone());
            if let Some(stack) = &error.stack {
                let stack = if raw_stacks {
                    stack.clone()
                } else {
                    without_stack_frames(stack)
                };
                shown["stack"] = Value::String(stack);
            }
            answer["error"] = shown;
        }
        answer["received"] = Value::Array(std::mem::take(
            &mut *received.lock().unwrap_or_else(PoisonError::into_inner),
        ));
        Answer::Ok(answer)
    }))
}
