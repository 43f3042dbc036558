//! The `parse_stream` op: a recorded provider body replayed through the provider's stream
//! parser, answered as reduced events and the final message (PROTOCOL.md, pi-ref D7).

use crate::protocol::Runtime;
use futures::StreamExt;
use pi_runtime::provider::http::{HttpModel, HttpOptions};
use pi_runtime::provider::{Api, Model};
use pi_runtime::{AssistantMessage, AssistantMessageEvent, ContentBlock, ToolCall};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::protocol::{Answer, Prepared, str_field};

/// What follows the engine's parse error in an `argumentsError` (SPEC §6.4).
const RECEIVED: &str = "\n\nReceived arguments:\n";
/// The one `argumentsError` head every implementation shares.
const NOT_AN_OBJECT: &str = "Tool arguments must be a JSON object";

pub(crate) fn prepare(request: &Map<String, Value>, runtime: &Runtime) -> Result<Prepared, String> {
    let api: Api = serde_json::from_value(Value::String(str_field(request, "api")?.to_owned()))
        .map_err(|_| "bad request: unknown `api`".to_owned())?;
    let model = model(request, api)?;
    let body = str_field(request, "body")?.to_owned();
    let raw_errors = request.get("rawErrors") == Some(&Value::Bool(true));
    let response = http_response(request)?;
    let model = HttpModel::new(model, HttpOptions::default());
    let runtime = runtime.clone();
    Ok(Box::new(move || {
        let events = match &response {
            // A recorded body alone: the stream as a successful response carries it.
            None => model.replay(body.as_str()),
            // With a status or a type, the same checks as a response off the network: an
            // error status is answered with the API's error text.
            Some((status, content_type)) => {
                model.replay_response(*status, content_type, body.as_str())
            }
        };
        let events: Vec<AssistantMessageEvent> = runtime.block_on(events.collect());
        answer(&events, api, raw_errors)
    }))
}

/// The request's optional `status` and `contentType` (PROTOCOL.md), defaulted as a real
/// stream would be; `None` when the request gives neither.
fn http_response(request: &Map<String, Value>) -> Result<Option<(u16, String)>, String> {
    let status = match request.get("status") {
        None | Some(Value::Null) => None,
        Some(status) => Some(
            status
                .as_u64()
                .and_then(|status| u16::try_from(status).ok())
                .filter(|status| (100..=999).contains(status))
                .ok_or("bad request: `status` must be an HTTP status (100 to 999)")?,
        ),
    };
    let content_type = match request.get("contentType") {
        None | Some(Value::Null) => None,
        Some(Value::String(content_type)) => Some(content_type.clone()),
        Some(_) => return Err("bad request: `contentType` must be a string".into()),
    };
    if status.is_none() && content_type.is_none() {
        return Ok(None);
    }
    Ok(Some((
        status.unwrap_or(200),
        content_type.unwrap_or_else(|| "text/event-stream".to_owned()),
    )))
}

/// The case's model laid over pi-ref's defaults (D4).
fn model(request: &Map<String, Value>, api: Api) -> Result<Model, String> {
    let mut model = json!({
        "id": "test-model",
        "provider": "test",
        "baseUrl": "http://127.0.0.1:9",
        "maxTokens": 8192,
    });
    if let Some(Value::Object(given)) = request.get("model") {
        for (key, value) in given {
            model[key] = value.clone();
        }
    }
    model["api"] = json!(api.as_str());
    serde_json::from_value(model).map_err(|error| format!("bad request: `model`: {error}"))
}

fn answer(events: &[AssistantMessageEvent], api: Api, raw_errors: bool) -> Answer {
    let Some(last) = events.last() else {
        return Answer::Err("the stream ended without done or error".into());
    };
    let message = match last {
        AssistantMessageEvent::Done { message, .. } => message,
        AssistantMessageEvent::Error { error, .. } => error,
        _ => return Answer::Err("the stream ended without done or error".into()),
    };
    let shown = Shown {
        google: api == Api::GoogleGenerativeAi,
        signatures: api == Api::OpenAiResponses,
        raw_errors,
    };
    let events = events.iter().map(|event| shown.event(event)).collect();
    let message = shown.message(message);
    Answer::Typed(Box::new(Reduced { events, message }))
}

/// The answer (D7): the reduced events and the final message.
#[derive(Serialize)]
struct Reduced {
    events: Vec<EventShown>,
    message: Value,
}

/// One stream event as D7 shows it. Typed rather than a JSON map: it is built for every
/// event inside the timed run, as pi-ref builds a plain object.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EventShown {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    content_index: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'static str>,
}

/// How D7 reduces what the runner shows.
struct Shown {
    google: bool,
    /// Text and thinking signatures, the state `openai-responses` replays (D16).
    signatures: bool,
    raw_errors: bool,
}

impl Shown {
    fn event(&self, event: &AssistantMessageEvent) -> EventShown {
        let mut shown = EventShown {
            kind: event.kind(),
            content_index: event.content_index(),
            tool_call: None,
            reason: None,
        };
        match event {
            AssistantMessageEvent::ToolCallEnd { tool_call, .. } => {
                shown.tool_call = Some(self.tool_call(tool_call));
            }
            AssistantMessageEvent::Done { reason, .. }
            | AssistantMessageEvent::Error { reason, .. } => {
                shown.reason = Some(reason.as_str());
            }
            _ => {}
        }
        shown
    }

    fn message(&self, message: &AssistantMessage) -> Value {
        let content: Vec<Value> = message
            .content
            .iter()
            .map(|block| match block {
                ContentBlock::Text(text) => {
                    let mut shown = json!({"type": "text", "text": text.text});
                    if let Some(signature) =
                        text.text_signature.as_ref().filter(|_| self.signatures)
                    {
                        shown["textSignature"] = json!(signature);
                    }
                    shown
                }
                ContentBlock::Thinking(thinking) => {
                    let mut shown = json!({"type": "thinking", "thinking": thinking.thinking});
                    if let Some(signature) = thinking
                        .thinking_signature
                        .as_ref()
                        .filter(|_| self.signatures)
                    {
                        shown["thinkingSignature"] = json!(signature);
                    }
                    shown
                }
                ContentBlock::ToolCall(call) => {
                    let mut shown = json!({"type": "toolCall"});
                    if let (Value::Object(shown), Value::Object(call)) =
                        (&mut shown, self.tool_call(call))
                    {
                        shown.extend(call);
                    }
                    shown
                }
                ContentBlock::Image(image) => json!({"type": "image", "mimeType": image.mime_type}),
                // A block kind this runner does not know yet: shown by its type only.
                _ => json!({"type": "unknown"}),
            })
            .collect();
        let mut out = json!({"content": content, "stopReason": message.stop_reason.as_str()});
        if let Some(error) = &message.error_message {
            out["errorMessage"] = json!(error);
        }
        out
    }

    fn tool_call(&self, call: &ToolCall) -> Value {
        let id = if self.google && is_generated_id(&call.id, &call.name) {
            "<generated>"
        } else {
            &call.id
        };
        let mut out = json!({"id": id, "name": call.name, "arguments": call.arguments});
        if let Some(error) = &call.arguments_error {
            out["argumentsError"] = json!(self.arguments_error(error));
        }
        out
    }

    /// The engine's own parse message becomes `<JSON parse error>`; pi's fixed text stays.
    fn arguments_error(&self, error: &str) -> String {
        match error.split_once(RECEIVED) {
            Some((head, raw)) if !self.raw_errors && head != NOT_AN_OBJECT => {
                format!("<JSON parse error>{RECEIVED}{raw}")
            }
            _ => error.to_owned(),
        }
    }
}

/// The runtime's synthesized Gemini ids look like `<name>_<ms>_<counter>`.
fn is_generated_id(id: &str, name: &str) -> bool {
    id.strip_prefix(name)
        .and_then(|rest| rest.strip_prefix('_'))
        .and_then(|rest| rest.split_once('_'))
        .is_some_and(|(ms, counter)| {
            [ms, counter]
                .iter()
                .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
        })
}
