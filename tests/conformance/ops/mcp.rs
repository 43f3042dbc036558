//! The `mcp_tool` and `mcp_result` ops: an MCP server's tools as agent tools and an MCP tool
//! result as the model sees it (SPEC §12), through `pi_runtime::mcp`.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use pi_runtime::__conformance::{ResultOptions, convert_result, tool_definitions};
use pi_runtime::tool::OutputSaver;
use pi_runtime::{ContentBlock, ToolResult};
use serde_json::{Map, Value, json};

use crate::protocol::{Answer, Prepared, str_field};

pub(crate) fn prepare_tool(request: &Map<String, Value>) -> Result<Prepared, String> {
    let server = str_field(request, "server")?.to_owned();
    let tools = match request.get("tools") {
        Some(Value::Array(tools)) => tools.clone(),
        _ => return Err("bad request: `tools` must be an array".into()),
    };
    let taken: Vec<String> = match request.get("taken") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(names)) => names
            .iter()
            .map(|n| n.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or("bad request: `taken` must be an array of strings")?,
        Some(_) => return Err("bad request: `taken` must be an array of strings".into()),
    };
    Ok(Box::new(move || {
        match tool_definitions(&server, &tools, |name| taken.iter().any(|t| t == name)) {
            Ok(definitions) => Answer::Ok(Value::Array(
                definitions
                    .into_iter()
                    .map(|d| {
                        let mut out = Map::new();
                        out.insert("name".into(), Value::String(d.name));
                        out.insert("label".into(), Value::String(d.label));
                        out.insert("description".into(), Value::String(d.description));
                        out.insert("parameters".into(), d.parameters);
                        out.insert("outputSchema".into(), d.output_schema);
                        if let Some(annotations) = d.annotations {
                            out.insert("annotations".into(), json!(annotations));
                        }
                        Value::Object(out)
                    })
                    .collect(),
            )),
            Err(error) => Answer::Err(error.to_string()),
        }
    }))
}

/// The reference's stub saver: `<saved>/<k><ext>`, `k` counting this request's saves.
struct StubSaver {
    saves: AtomicUsize,
    error: Option<String>,
}

impl OutputSaver for StubSaver {
    fn save(&self, extension: &str, _bytes: &[u8]) -> io::Result<PathBuf> {
        let k = self.saves.fetch_add(1, Ordering::Relaxed) + 1;
        match &self.error {
            Some(message) => Err(io::Error::other(message.clone())),
            None => Ok(PathBuf::from(format!("<saved>/{k}{extension}"))),
        }
    }
}

pub(crate) fn prepare_result(request: &Map<String, Value>) -> Result<Prepared, String> {
    let server = str_field(request, "server")?.to_owned();
    let tool = str_field(request, "tool")?.to_owned();
    let result = request
        .get("result")
        .cloned()
        .ok_or("bad request: `result` is required")?;
    let readable = match request.get("readableResources") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("bad request: `readableResources` must be a boolean".into()),
    };
    let error = match request.get("saveError") {
        None | Some(Value::Null) => None,
        Some(Value::String(message)) => Some(message.clone()),
        Some(_) => return Err("bad request: `saveError` must be a string".into()),
    };
    Ok(Box::new(move || {
        let saver = StubSaver {
            saves: AtomicUsize::new(0),
            error: error.clone(),
        };
        let options = ResultOptions::new(&saver).with_readable_resources(readable);
        match convert_result(&server, &tool, &result, options) {
            Ok(converted) => Answer::Ok(result_to_json(&converted)),
            Err(error) => Answer::Err(error.to_string()),
        }
    }))
}

/// The answer shape of the conformance protocol: `{content, details, isError?}`.
fn result_to_json(result: &ToolResult) -> Value {
    let content: Vec<Value> = result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Image(image) => {
                json!({"type": "image", "data": image.data, "mimeType": image.mime_type})
            }
            other => json!({"type": "text", "text": other.as_text().unwrap_or_default()}),
        })
        .collect();
    let mut out = Map::new();
    out.insert("content".into(), Value::Array(content));
    out.insert(
        "details".into(),
        result.details.clone().unwrap_or(Value::Null),
    );
    if result.is_error {
        out.insert("isError".into(), Value::Bool(true));
    }
    Value::Object(out)
}
