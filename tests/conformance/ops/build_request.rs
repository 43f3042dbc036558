//! The `build_request` op: the JSON body a provider request would POST (PROTOCOL.md;
//! pi-ref D4 model defaults, D5 message defaults, D6 `capture`).

use pi_runtime::provider::{Api, Compat, Model, request_body, request_headers};
use pi_runtime::stream::CacheRetention;
use pi_runtime::{
    ConstrainedSampling, Context, Message, StreamOptions, ThinkingLevel, Tool, ToolChoice,
};
use serde_json::{Map, Value, json};

use crate::protocol::{Answer, Prepared};

pub(crate) fn prepare(request: &Map<String, Value>) -> Result<Prepared, String> {
    let model = parse_model(request)?;
    let context = parse_context(request.get("context"), &model)?;
    let options = parse_options(request.get("options"))?;
    let payload = match request.get("capture") {
        None | Some(Value::Null) => false,
        Some(Value::String(capture)) if capture == "payload" => true,
        Some(other) => return Err(format!("unsupported capture {other}")),
    };
    Ok(Box::new(move || {
        match request_body(&model, &context, &options) {
            Ok(body) if payload && model.api == Api::GoogleGenerativeAi => {
                Answer::Ok(sdk_parameters(&model, body))
            }
            Ok(body) if payload && model.api == Api::AnthropicMessages => {
                Answer::Ok(with_betas(body, &model, &context, &options))
            }
            Ok(body) => Answer::Ok(body),
            Err(error) => Answer::Err(error.to_string()),
        }
    }))
}

/// What pi hands `@google/genai` (D6 `capture: payload`): the REST body before the SDK builds
/// it, `{model, contents, config}` with the generation settings, the system prompt (as text)
/// and the tools side by side in one flat `config`. Other APIs' SDKs take the body as is.
fn sdk_parameters(model: &Model, mut body: Value) -> Value {
    let mut take = |key: &str| body.as_object_mut().and_then(|body| body.remove(key));
    let contents = take("contents").unwrap_or_else(|| json!([]));
    let system = take("systemInstruction");
    let tools = take("tools");
    let tool_config = take("toolConfig");
    let mut generation = match take("generationConfig") {
        Some(Value::Object(generation)) => generation,
        _ => Map::new(),
    };
    let mut config = Map::new();
    for key in ["temperature", "maxOutputTokens"] {
        if let Some(value) = generation.remove(key) {
            config.insert(key.into(), value);
        }
    }
    if let Some(text) = system.as_ref().and_then(|s| s.pointer("/parts/0/text")) {
        config.insert("systemInstruction".into(), text.clone());
    }
    if let Some(tools) = tools {
        config.insert("tools".into(), tools);
    }
    if let Some(tool_config) = tool_config {
        config.insert("toolConfig".into(), tool_config);
    }
    config.insert("automaticContinuation".into(), Value::Bool(false));
    if let Some(thinking) = generation.remove("thinkingConfig") {
        config.insert("thinkingConfig".into(), thinking);
    }
    json!({"model": model.id, "contents": contents, "config": config})
}

/// pi's Anthropic params (D6 `capture: payload`): the body plus the `betas` the SDK sends as
/// the `anthropic-beta` header, after `stream` as pi writes them.
fn with_betas(body: Value, model: &Model, context: &Context, options: &StreamOptions) -> Value {
    let betas: Vec<Value> = request_headers(model, context, options)
        .unwrap_or_default()
        .into_iter()
        .filter(|(name, _)| name == "anthropic-beta")
        .flat_map(|(_, value)| {
            value
                .split(',')
                .map(|beta| Value::from(beta.trim()))
                .collect::<Vec<_>>()
        })
        .collect();
    let Value::Object(fields) = body else {
        return body;
    };
    if betas.is_empty() {
        return Value::Object(fields);
    }
    let mut params = Map::new();
    let mut betas = Some(Value::Array(betas));
    for (key, value) in fields {
        let after_stream = key == "stream";
        params.insert(key, value);
        if after_stream && let Some(betas) = betas.take() {
            params.insert("betas".into(), betas);
        }
    }
    Value::Object(params)
}

/// The request's `api` and `model`, laid over pi-ref's fixed defaults (D4).
pub(crate) fn parse_model(request: &Map<String, Value>) -> Result<Model, String> {
    let api = match request.get("api").and_then(Value::as_str) {
        Some("openai-completions") => Api::OpenAiCompletions,
        Some("openai-responses") => Api::OpenAiResponses,
        Some("anthropic-messages") => Api::AnthropicMessages,
        Some("google-generative-ai") => Api::GoogleGenerativeAi,
        Some(other) => return Err(format!("unsupported api {other:?}")),
        None => return Err("bad request: `api` must be a string".into()),
    };
    let empty = Map::new();
    let fields = match request.get("model") {
        None => &empty,
        Some(Value::Object(fields)) => fields,
        Some(_) => return Err("bad request: `model` must be an object".into()),
    };
    let text = |key: &str, default: &str| match fields.get(key) {
        None => Ok(default.to_owned()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(format!("bad request: `model.{key}` must be a string")),
    };
    let mut compat: Compat = match fields.get("compat") {
        None | Some(Value::Null) => Compat::default(),
        Some(compat) => serde_json::from_value(compat.clone())
            .map_err(|error| format!("bad request: `model.compat`: {error}"))?,
    };
    // pi keeps the level map on the model; this crate keeps it with the other compat flags.
    if let Some(Value::Object(map)) = fields.get("thinkingLevelMap") {
        compat.thinking_level_map = Some(map.clone());
    }
    let input = fields.get("input").and_then(Value::as_array);
    let mut model = Model::new(
        api,
        text("provider", "test")?,
        text("id", "test-model")?,
        text("baseUrl", "http://127.0.0.1:9")?,
    );
    model.reasoning = fields
        .get("reasoning")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    model.supports_images = input.is_some_and(|input| input.iter().any(|i| i == "image"));
    // Absent limits keep `Model::new`'s defaults, which are pi-ref's (8192, 128k).
    if let Some(n) = fields.get("maxTokens") {
        model.max_tokens = n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or("bad request: `model.maxTokens` must be a positive integer")?;
    }
    if let Some(n) = fields.get("contextWindow") {
        model.context_window = n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or("bad request: `model.contextWindow` must be a non-negative integer")?;
    }
    model.compat = compat;
    Ok(model)
}

fn parse_context(context: Option<&Value>, model: &Model) -> Result<Context, String> {
    let empty = Map::new();
    let context = match context {
        None => &empty,
        Some(Value::Object(context)) => context,
        Some(_) => return Err("bad request: `context` must be an object".into()),
    };
    let system_prompt = match context.get("systemPrompt") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(prompt)) => prompt.clone(),
        Some(_) => return Err("bad request: `context.systemPrompt` must be a string".into()),
    };
    let messages = match context.get("messages") {
        None => Vec::new(),
        Some(Value::Array(messages)) => messages
            .iter()
            .enumerate()
            .map(|(index, message)| parse_message(index, message, model))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("bad request: `context.messages` must be an array".into()),
    };
    let tools = match context.get("tools") {
        None => Vec::new(),
        Some(Value::Array(tools)) => tools.iter().map(parse_tool).collect::<Result<_, _>>()?,
        Some(_) => return Err("bad request: `context.tools` must be an array".into()),
    };
    Ok(Context::new(system_prompt, messages, tools))
}

/// A pi message object with the fields a case may leave out filled in (D5).
pub(crate) fn parse_message(
    index: usize,
    message: &Value,
    model: &Model,
) -> Result<Message, String> {
    let Value::Object(fields) = message else {
        return Err(format!("bad request: message {index} must be an object"));
    };
    let mut fields = fields.clone();
    fields.entry("timestamp").or_insert(json!(index + 1));
    match fields.get("role").and_then(Value::as_str) {
        Some("system") => {
            fields.entry("content").or_insert(json!(""));
        }
        Some("user") => {
            fields.entry("content").or_insert(json!(""));
        }
        Some("assistant") => {
            fields.entry("content").or_insert(json!([]));
            fields.entry("api").or_insert(json!(model.api.as_str()));
            fields.entry("provider").or_insert(json!(model.provider));
            fields.entry("model").or_insert(json!(model.id));
            let has_call = fields["content"]
                .as_array()
                .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "toolCall"));
            fields
                .entry("stopReason")
                .or_insert(json!(if has_call { "toolUse" } else { "stop" }));
        }
        Some("toolResult") => {
            fields.entry("content").or_insert(json!([]));
            fields.entry("toolName").or_insert(json!(""));
            fields.entry("isError").or_insert(json!(false));
        }
        _ => return Err(format!("bad request: message {index} has an unknown role")),
    }
    serde_json::from_value(Value::Object(fields))
        .map_err(|error| format!("bad request: message {index}: {error}"))
}

/// `{name, description?, parameters?, constrainedSampling?}` (D5 defaults).
pub(crate) fn parse_tool(tool_json: &Value) -> Result<Tool, String> {
    let tool = tool_json;
    let name = tool
        .get("name")
        .and_then(Value::as_str)
        .ok_or("bad request: a tool needs a string `name`")?;
    let description = tool
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("");
    let parameters = tool
        .get("parameters")
        .cloned()
        .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
    let tool = Tool::new(name, description, parameters);
    Ok(match tool_field(tool_json, "constrainedSampling") {
        None | Some(Value::Bool(false)) => tool,
        Some(config) => {
            let sampling = serde_json::from_value::<ConstrainedSampling>(config.clone())
                .map_err(|error| format!("unsupported constrainedSampling: {error}"))?;
            tool.with_constrained_sampling(sampling)
        }
    })
}

fn parse_options(options: Option<&Value>) -> Result<StreamOptions, String> {
    let empty = Map::new();
    let options = match options {
        None => &empty,
        Some(Value::Object(options)) => options,
        Some(_) => return Err("bad request: `options` must be an object".into()),
    };
    let field = |key: &str| options.get(key).filter(|v| !v.is_null());
    let reasoning = field("reasoning")
        .map(|level| serde_json::from_value::<ThinkingLevel>(level.clone()))
        .transpose()
        .map_err(|error| format!("unsupported reasoning level: {error}"))?;
    let cache_retention = field("cacheRetention")
        .map(|retention| serde_json::from_value::<CacheRetention>(retention.clone()))
        .transpose()
        .map_err(|error| format!("unsupported cacheRetention: {error}"))?;
    let max_tokens = field("maxTokens")
        .map(|n| n.as_u64().and_then(|n| u32::try_from(n).ok()))
        .map(|n| n.ok_or("bad request: `options.maxTokens` must be a positive integer"))
        .transpose()?;
    let mut options = StreamOptions::default();
    options.reasoning = reasoning;
    options.tool_choice = field("toolChoice").map(tool_choice);
    options.max_tokens = max_tokens;
    options.temperature = field("temperature").and_then(Value::as_f64);
    options.cache_retention = cache_retention;
    options.session_id = field("sessionId")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Ok(options)
}

/// pi's `toolChoice`, provider JSON as given: its two provider-neutral words typed, the rest
/// (`"required"`, `"any"`, objects) raw, which every API sends exactly as pi does.
fn tool_choice(choice: &Value) -> ToolChoice {
    match choice.as_str() {
        Some("auto") => ToolChoice::Auto,
        Some("none") => ToolChoice::None,
        _ => ToolChoice::Raw(choice.clone()),
    }
}

fn tool_field<'a>(tool: &'a Value, key: &str) -> Option<&'a Value> {
    tool.get(key).filter(|value| !value.is_null())
}
