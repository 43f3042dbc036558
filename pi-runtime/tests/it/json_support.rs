//! The final parse of tool-call arguments as a pair, to compare with literals.

use pi_runtime::json::parse_tool_call_arguments;
use serde_json::Value;

/// `(arguments, argumentsError)` of [`parse_tool_call_arguments`].
pub(crate) fn final_parse(text: &str) -> (Value, Option<String>) {
    let parsed = parse_tool_call_arguments(text);
    (parsed.arguments, parsed.error)
}
