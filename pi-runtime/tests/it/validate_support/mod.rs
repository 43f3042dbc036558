//! Shared helpers of the `validate_*` tests.

use pi_runtime::args::CompiledSchema;
use serde_json::{Value, json};

/// Validate `arguments`: the coerced value, or the error lines (`path: message`) between the
/// header and the `Received arguments` block.
pub(crate) fn run(schema: &Value, arguments: &Value) -> Result<Value, Vec<String>> {
    let compiled = CompiledSchema::compile(schema).expect("test schemas compile");
    compiled
        .validate("t", arguments)
        .map_err(|error| error_lines(error.message(), arguments))
}

/// The `  - ` lines of a validation error text, after checking its frame.
fn error_lines(text: &str, arguments: &Value) -> Vec<String> {
    let (head, received) = text
        .split_once("\n\nReceived arguments:\n")
        .expect("the text has a Received arguments block");
    assert_eq!(received, serde_json::to_string_pretty(arguments).unwrap());
    let mut lines = head.lines();
    assert_eq!(lines.next(), Some("Validation failed for tool \"t\":"));
    lines
        .map(|line| line.strip_prefix("  - ").expect("issue line").to_owned())
        .collect()
}

/// Property `v` with schema `s`, required.
pub(crate) fn prop(s: Value) -> Value {
    json!({"type": "object", "properties": {"v": s}, "required": ["v"]})
}

/// Run `input` as property `v` of `prop(s)`: the coerced `v` or the error lines.
pub(crate) fn run_v(s: &Value, input: &Value) -> Result<Value, Vec<String>> {
    run(&prop(s.clone()), &json!({"v": input})).map(|coerced| coerced["v"].clone())
}
