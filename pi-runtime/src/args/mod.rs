//! The argument pipeline: prepare -> coerce -> validate -> the error text the model sees,
//! with pi-schema's rules and words.
//!
//! This module knows schemas and values only; the tool layers and the agent build on it.
//! A tool's parameter schema is compiled once ([`CompiledSchema::compile`], cached by
//! [`Tool::compiled_schema`](crate::Tool::compiled_schema)). Each call then coerces a copy of the arguments (lenient: `"42"`
//! for a number, a bare value for an array, `null` for an omitted optional property), checks
//! the result strictly with the `jsonschema` crate, and only when that fails walks schema and
//! value to explain the failure in words the model can correct itself from:
//!
//! ```
//! use pi_runtime::args::CompiledSchema;
//! use serde_json::json;
//!
//! let schema = CompiledSchema::compile(&json!({
//!     "type": "object",
//!     "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
//!     "required": ["a", "b"]
//! }))?;
//! assert_eq!(
//!     schema.validate("add", &json!({"a": "1", "b": 2})),
//!     Ok(json!({"a": 1, "b": 2}))
//! );
//!
//! let error = schema.validate("add", &json!({"a": 1, "b": "x"})).unwrap_err();
//! assert_eq!(
//!     error.message(),
//!     "Validation failed for tool \"add\":\n  - b: expected number, got string\n\n\
//!      Received arguments:\n{\n  \"a\": 1,\n  \"b\": \"x\"\n}"
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod coerce;
mod compile;
mod explain;
mod format;
mod js_number;
pub(crate) use js_number::number_value;
mod typed;
mod value;

use std::fmt;

use serde_json::Value;

/// A parameter schema that cannot be used. It is rejected when the tool is registered, not
/// at its first call as in pi.
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

/// Arguments that do not match a tool's parameters: the text the model sees (`Validation
/// failed for tool "<name>":`, one `  - <path>: <message>` line per error, then the
/// arguments as received; see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ValidationError {
    message: String,
}

impl ValidationError {
    pub(crate) fn new(message: String) -> Self {
        ValidationError { message }
    }

    /// The text the model sees.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Consume into the text.
    pub fn into_message(self) -> String {
        self.message
    }
}

/// A schema compiled once: the validator of every subschema, the coercion plan and the
/// regexes. Cheap to share; validating never compiles anything.
pub struct CompiledSchema {
    tree: compile::Tree,
}

impl fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledSchema").finish_non_exhaustive()
    }
}

impl CompiledSchema {
    /// Compile a parameter schema.
    ///
    /// A `$ref` that names nothing is allowed: that place rejects every value with
    /// `unresolved reference <ref>` and the rest validates normally.
    ///
    /// # Errors
    /// The schema is not an object or does not compile (an invalid keyword value, a
    /// `pattern` that is not an ECMAScript regex).
    pub fn compile(schema: &Value) -> Result<Self, SchemaError> {
        compile::compile(schema).map(|tree| CompiledSchema { tree })
    }

    /// Coerce a copy of `arguments` and validate it; `Ok` carries the coerced arguments,
    /// `Err` the text the model sees (its `Received arguments` block shows `arguments` as
    /// given, before coercion).
    ///
    /// # Errors
    /// The arguments do not match the schema.
    pub fn validate(&self, tool_name: &str, arguments: &Value) -> Result<Value, ValidationError> {
        let coerced = coerce::coerce(&self.tree, arguments);
        let candidate = coerced.as_ref().unwrap_or(arguments);
        if self.tree.root_accepts(candidate) {
            return Ok(coerced.unwrap_or_else(|| arguments.clone()));
        }
        let issues = explain::explain(&self.tree, candidate);
        Err(ValidationError::new(format::validation_failed(
            tool_name, &issues, arguments,
        )))
    }
}

/// Deserialize validated arguments into a tool's parameter type. A failure
/// (schema and type disagree, or a hook changed the arguments) is reported in the validation
/// format, at the place serde stopped: `Validation failed for tool "<name>":\n  - <path>:
/// <serde message>\n\nReceived arguments:\n<json>`.
///
/// ```
/// use pi_runtime::args::deserialize_arguments;
/// use serde_json::json;
///
/// #[derive(serde::Deserialize)]
/// struct Edit {
///     #[serde(rename = "newText")]
///     new_text: String,
/// }
/// #[derive(serde::Deserialize)]
/// struct Args {
///     edits: Vec<Edit>,
/// }
///
/// let error = deserialize_arguments::<Args>("edit", json!({"edits": [{"newText": 1}]}))
///     .err()
///     .unwrap();
/// assert!(error.message().starts_with(
///     "Validation failed for tool \"edit\":\n  - edits.0.newText: invalid type: integer `1`"
/// ));
/// ```
///
/// # Errors
/// The text the model sees.
pub fn deserialize_arguments<T: serde::de::DeserializeOwned>(
    tool_name: &str,
    arguments: Value,
) -> Result<T, ValidationError> {
    typed::deserialize(tool_name, &arguments)
}
