//! The argument pipeline: prepare -> coerce -> validate -> the error text the model sees
//! (SPEC §4).
//!
//! INTERFACE STUB: the argument-pipeline work replaces the bodies; the signatures are what
//! the rest of the crate calls.

use serde_json::Value;

use crate::message::ToolCall;
use crate::tool::{Tool, ToolError};

/// A parameter schema that cannot be used (SPEC §1.1 [RUST]: rejected at registration).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SchemaError {
    message: String,
}

impl SchemaError {
    /// An error with this text.
    pub fn new(message: impl Into<String>) -> Self {
        SchemaError {
            message: message.into(),
        }
    }
}

/// A schema compiled once: coercion plan and validator.
#[derive(Debug)]
pub struct CompiledSchema {
    schema: Value,
}

impl CompiledSchema {
    /// Compile a parameter schema.
    ///
    /// # Errors
    /// The schema is not an object or does not compile.
    pub fn compile(schema: &Value) -> Result<Self, SchemaError> {
        if !schema.is_object() {
            return Err(SchemaError::new(
                "the parameter schema must be a JSON object",
            ));
        }
        Ok(CompiledSchema {
            schema: schema.clone(),
        })
    }

    /// Coerce a copy of `arguments` and validate it; `Err` carries the exact text of
    /// SPEC §4.2.
    ///
    /// # Errors
    /// The arguments do not match the schema.
    pub fn validate(&self, _tool_name: &str, arguments: &Value) -> Result<Value, ToolError> {
        let _ = &self.schema;
        Ok(arguments.clone())
    }
}

/// Validate `prepared` (the call's arguments after `prepare_arguments`) for `tool`
/// (SPEC §4.1). A call whose final arguments failed to parse fails with
/// `Invalid arguments for tool "<name>": <argumentsError>`.
///
/// # Errors
/// The text the model sees.
pub fn validate_prepared(
    tool: &Tool,
    call: &ToolCall,
    prepared: &Value,
) -> Result<Value, ToolError> {
    if let Some(error) = &call.arguments_error {
        return Err(ToolError::new(format!(
            "Invalid arguments for tool \"{}\": {error}",
            call.name
        )));
    }
    let compiled = tool
        .compiled_schema()
        .map_err(|e| ToolError::new(e.to_string()))?;
    compiled.validate(&tool.name, prepared)
}

/// Validate a call's raw arguments against `tool` (no `prepare_arguments`).
///
/// # Errors
/// The text the model sees.
pub fn validate_tool_arguments(tool: &Tool, call: &ToolCall) -> Result<Value, ToolError> {
    validate_prepared(tool, call, &call.arguments)
}

/// Deserialize validated arguments into a tool's parameter type (SPEC §11.3.3). A failure
/// (schema and type disagree, or a hook changed the arguments) is reported in the validation
/// format: `Validation failed for tool "<name>":\n  - <path>: <serde message>\n\nReceived
/// arguments:\n<json>`.
///
/// # Errors
/// The text the model sees.
pub fn deserialize_arguments<T: serde::de::DeserializeOwned>(
    tool_name: &str,
    arguments: Value,
) -> Result<T, ToolError> {
    serde_json::from_value::<T>(arguments.clone()).map_err(|error| {
        let pretty = serde_json::to_string_pretty(&arguments).unwrap_or_default();
        ToolError::new(format!(
            "Validation failed for tool \"{tool_name}\":\n  - root: {error}\n\nReceived arguments:\n{pretty}"
        ))
    })
}
