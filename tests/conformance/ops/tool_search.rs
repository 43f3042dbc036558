//! The `tool_search` op: one call of the `tool_search` tool over a session's registered and
//! active tools (SPEC §13.3), the arguments validated against the tool's schema first, as the
//! agent loop does.

use pi_runtime::agent::validate_tool_call;
use pi_runtime::tool::Exposure;
use pi_runtime::tool_search::{self, RegisteredTool, ToolNamespace, ToolSearch, ToolSearchArgs};
use pi_runtime::{Tool, ToolCall};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::protocol::{Answer, Prepared};

#[derive(Deserialize)]
struct Request {
    tools: Vec<RequestTool>,
    #[serde(default)]
    active: Vec<String>,
    #[serde(default)]
    definition: bool,
}

#[derive(Deserialize)]
struct RequestTool {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default = "empty_object_schema")]
    parameters: Value,
    #[serde(default = "deferred")]
    exposure: Exposure,
    #[serde(default)]
    namespace: Option<ToolNamespace>,
}

fn empty_object_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

fn deferred() -> Exposure {
    Exposure::Deferred
}

#[derive(Serialize)]
struct Reply {
    matches: Vec<ReplyMatch>,
    text: String,
    active: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool: Option<Value>,
}

#[derive(Serialize)]
struct ReplyMatch {
    name: String,
    score: f64,
}

pub(crate) fn prepare(request: &Map<String, Value>) -> Result<Prepared, String> {
    let parsed = Request::deserialize(Value::Object(request.clone()))
        .map_err(|error| format!("bad request: {error}"))?;
    // The call's arguments as the model sent them: either may be missing or of any type.
    let mut arguments = Map::new();
    for key in ["query", "limit"] {
        if let Some(value) = request.get(key) {
            arguments.insert(key.to_owned(), value.clone());
        }
    }
    let call = ToolCall::new(
        "call_tool_search",
        tool_search::NAME,
        Value::Object(arguments),
    );
    let tool = tool_search::definition();
    // Compiled once per schema, as pi caches its validator (PROTOCOL.md `bench`).
    let _ = tool.compiled_schema();
    let definition = parsed.definition.then(|| declared(&tool));
    Ok(Box::new(move || {
        run(&parsed, &tool, &call, definition.as_ref())
    }))
}

/// Everything a call does, in pi's order: validation, the tool's checks of its arguments,
/// the index over the session's tools, the ranking.
fn run(request: &Request, tool: &Tool, call: &ToolCall, definition: Option<&Value>) -> Answer {
    let arguments = match validate_tool_call(tool, call) {
        Ok(arguments) => arguments,
        Err(error) => return Answer::Err(error.into_message()),
    };
    let args = match ToolSearchArgs::from_arguments(&arguments) {
        Ok(args) => args,
        Err(error) => return Answer::Err(error.to_string()),
    };
    let search = ToolSearch::new(request.tools.iter().map(|t| {
        let registered = RegisteredTool::new(&t.name, &t.description, &t.parameters, t.exposure);
        match &t.namespace {
            Some(namespace) => registered.with_namespace(namespace),
            None => registered,
        }
    }));
    let output = search.run(args, &request.active);
    let mut active = request.active.clone();
    active.extend(output.loaded().map(str::to_owned));
    Answer::Typed(Box::new(Reply {
        matches: output
            .matches
            .into_iter()
            .map(|m| ReplyMatch {
                name: m.name,
                // PROTOCOL.md: scores rounded to 6 decimals, as `Math.round(score * 1e6) / 1e6`.
                score: (m.score * 1e6).round() / 1e6,
            })
            .collect(),
        text: output.text,
        active,
        tool: definition.cloned(),
    }))
}

/// The tool as declared: `name`, `label`, `description`, `promptSnippet`, `parameters`,
/// `exposure`.
fn declared(tool: &Tool) -> Value {
    json!({
        "name": tool.name,
        "label": tool_search::LABEL,
        "description": tool.description,
        "promptSnippet": tool_search::PROMPT_SNIPPET,
        "parameters": tool.parameters,
        "exposure": tool_search::EXPOSURE.as_str(),
    })
}
