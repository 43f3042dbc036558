//! The `validate` op: one tool call's argument pipeline (coercion, validation, the error
//! text), exactly as the agent loop runs it.

use pi_runtime::agent::validate_tool_call;
use pi_runtime::{Tool, ToolCall};
use serde_json::{Map, Value};

use crate::protocol::{Answer, Prepared, str_field};

/// Parse the request and compile the schema once (PROTOCOL.md allows caching the compiled
/// schema, as pi does); each run of the closure does the coercion, validation and error text.
pub(crate) fn prepare(request: &Map<String, Value>) -> Result<Prepared, String> {
    let name = str_field(request, "tool")?;
    let schema = request
        .get("schema")
        .cloned()
        .ok_or("bad request: `schema` is required")?;
    let arguments = request
        .get("arguments")
        .cloned()
        .ok_or("bad request: `arguments` is required")?;
    let arguments_error = match request.get("argumentsError") {
        None | Some(Value::Null) => None,
        Some(Value::String(error)) => Some(error.clone()),
        Some(_) => return Err("bad request: `argumentsError` must be a string".into()),
    };
    let description = match request.get("description") {
        Some(Value::String(description)) => description.as_str(),
        _ => "",
    };
    let tool = Tool::new(name, description, schema);
    // Compiling here is the "once per schema" the reference also does; a schema that does
    // not compile is the answer of every run.
    let _ = tool.compiled_schema();
    let mut call = ToolCall::new("call", name, arguments);
    call.arguments_error = arguments_error;
    Ok(Box::new(move || match validate_tool_call(&tool, &call) {
        Ok(coerced) => Answer::Ok(coerced),
        Err(error) => Answer::Err(error.into_message()),
    }))
}
