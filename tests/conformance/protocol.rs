//! Transport: parse one request line, dispatch it to its op, shape the answer.

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::ops;

/// The runner's one async runtime, shared by the ops that drive futures.
pub(crate) type Runtime = std::sync::Arc<tokio::runtime::Runtime>;

/// What an op answers.
pub(crate) enum Answer {
    Ok(Value),
    /// An `ok` built as typed data, as a Rust program keeps its results; it becomes JSON
    /// only when the answer is written (never inside a `bench` timing, like every answer).
    Typed(Box<dyn Reply>),
    Err(String),
    Unsupported(String),
}

/// A typed `ok` value.
pub(crate) trait Reply {
    fn into_json(self: Box<Self>) -> Value;
}

impl<T: Serialize> Reply for T {
    fn into_json(self: Box<Self>) -> Value {
        serde_json::to_value(&*self).unwrap_or_else(
            |error| json!({"runnerError": format!("answer not serializable: {error}")}),
        )
    }
}

/// A request parsed once and ready to run (possibly many times, for `bench`).
pub(crate) type Prepared = Box<dyn FnMut() -> Answer>;

/// Parse the op's fields. `Err` is the `unsupported` text (`bad request: ...` for a wrong
/// shape).
pub(crate) fn prepare(request: &Map<String, Value>, runtime: &Runtime) -> Result<Prepared, String> {
    let op = request.get("op").and_then(Value::as_str).unwrap_or("");
    match op {
        "validate" => ops::validate::prepare(request),
        "partial_json" => ops::partial_json::prepare(request),
        "partial_json_stream" => ops::partial_json::prepare_stream(request),
        "build_request" => ops::build_request::prepare(request),
        "parse_stream" => ops::parse_stream::prepare(request, runtime),
        "scenario" => ops::scenario::prepare(request, runtime),
        "system_prompt_tools" => ops::system_prompt_tools::prepare(request),
        "tool_changes" => ops::tool_changes::prepare(request),
        "codemode_declarations" => ops::codemode::prepare_declarations(request),
        "codemode_source" => ops::codemode::prepare_source(request),
        "codemode_run" => ops::codemode_run::prepare(request, runtime),
        "mcp_tool" => ops::mcp::prepare_tool(request),
        "mcp_result" => ops::mcp::prepare_result(request),
        "tool_search" => ops::tool_search::prepare(request),
        "bench" => crate::bench::prepare(request, runtime),
        other => Err(format!("unknown op {other:?}")),
    }
}

/// Answer one line of input.
pub(crate) fn answer_line(line: &str, runtime: &Runtime) -> Value {
    let request = match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(request)) => request,
        Ok(_) => return json!({"unsupported": "request is not a JSON object"}),
        Err(error) => return json!({"unsupported": format!("malformed request: {error}")}),
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    // A bug in an op must not take the runner down: every later line still gets its answer.
    let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        match prepare(&request, runtime) {
            Ok(mut run) => run(),
            Err(unsupported) => Answer::Unsupported(unsupported),
        }
    }))
    .unwrap_or_else(|panic| Answer::Err(format!("internal error: {}", panic_text(&*panic))));
    let mut out = Map::new();
    out.insert("id".into(), id);
    match answer {
        Answer::Ok(value) => out.insert("ok".into(), value),
        Answer::Typed(reply) => out.insert("ok".into(), reply.into_json()),
        Answer::Err(text) => out.insert("err".into(), Value::String(text)),
        Answer::Unsupported(text) => out.insert("unsupported".into(), Value::String(text)),
    };
    Value::Object(out)
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_owned()
    }
}

/// A required string field, or the `bad request` text.
#[allow(dead_code, reason = "used by the op modules as they land")]
pub(crate) fn str_field<'a>(request: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    request
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("bad request: `{key}` must be a string"))
}
