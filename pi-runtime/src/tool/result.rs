//! `ToolResult` (what `execute` returns), `ToolError` (a failure the model sees) and the
//! conversions a `#[tool]` fn's return value goes through.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::args::ValidationError;
use crate::message::{ContentBlock, Usage};

/// The result of a tool execution. Build it with [`text`](Self::text),
/// [`error`](Self::error) or [`new`](Self::new) and the `with_*` methods; it serializes
/// (camelCase, as pi names the fields), so a saved run keeps its results.
///
/// ```
/// use pi_runtime::{ContentBlock, ToolResult};
/// use serde_json::json;
///
/// let result = ToolResult::new(vec![ContentBlock::text("2 files")])
///     .with_structured_content(json!({"files": 2}))
///     .with_terminate(true);
/// let json = serde_json::to_value(&result).unwrap();
/// assert_eq!(json["structuredContent"], json!({"files": 2}));
/// assert_eq!(serde_json::from_value::<ToolResult>(json).unwrap(), result);
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct ToolResult {
    /// Ordered text and image blocks for the model.
    pub content: Vec<ContentBlock>,
    /// Any JSON for UIs and logs; never sent to the model.
    pub details: Option<Value>,
    /// JSON for programmatic callers; never sent to the model.
    pub structured_content: Option<Value>,
    /// The tool's own usage, if it called a model.
    pub usage: Option<Usage>,
    /// The call failed (the details are kept).
    pub is_error: bool,
    /// Stop after this batch if every result of the batch agrees.
    pub terminate: bool,
}

impl ToolResult {
    /// A result with these content blocks.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        ToolResult {
            content,
            ..ToolResult::default()
        }
    }

    /// A result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult {
            content: vec![ContentBlock::text(text)],
            ..ToolResult::default()
        }
    }

    /// The error result every failure of a call becomes: one text block, `details: {}`,
    /// `isError: true`.
    pub fn error(message: impl Into<String>) -> Self {
        ToolResult {
            content: vec![ContentBlock::text(message)],
            details: Some(Value::Object(serde_json::Map::new())),
            is_error: true,
            ..ToolResult::default()
        }
    }

    /// Set `details`.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// Set `structuredContent`.
    #[must_use]
    pub fn with_structured_content(mut self, structured_content: Value) -> Self {
        self.structured_content = Some(structured_content);
        self
    }

    /// Set `usage`.
    #[must_use]
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Set `terminate`.
    #[must_use]
    pub fn with_terminate(mut self, terminate: bool) -> Self {
        self.terminate = terminate;
        self
    }

    /// Set `isError`.
    #[must_use]
    pub fn with_is_error(mut self, is_error: bool) -> Self {
        self.is_error = is_error;
        self
    }

    /// The text blocks joined with `\n`.
    pub fn text_content(&self) -> String {
        crate::message::join_text(&self.content)
    }
}

/// A failure the model sees as an error result whose text is the message.
///
/// Any `std::error::Error` converts into it, so `?` works inside tools. Like `anyhow::Error`,
/// it does not implement `std::error::Error` itself: that would conflict with the blanket
/// conversion (coherence forbids both).
#[derive(Clone, PartialEq, Eq)]
pub struct ToolError {
    message: String,
    kind: ToolErrorKind,
}

/// What kind of failure a [`ToolError`] reports (tracing's `error.type` follows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolErrorKind {
    /// The tool ran and failed.
    Failed,
    /// The arguments did not fit the tool's parameters (the model can correct them).
    InvalidArguments,
    /// The model should try again differently ([`ToolError::retry`]); counts against the
    /// tool's retry budget like invalid arguments.
    Retry,
}

impl ToolError {
    /// An error with this exact text: the tool ran and failed.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
            kind: ToolErrorKind::Failed,
        }
    }

    /// An error with this exact text, about arguments that do not fit.
    pub fn invalid_arguments(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
            kind: ToolErrorKind::InvalidArguments,
        }
    }

    /// An error the model is meant to correct by calling again (a query that matched
    /// nothing, a name that is taken). It counts against the tool's retry budget
    /// ([`ToolPolicy::retries`](super::ToolPolicy::retries)), as invalid arguments do; an
    /// error made with [`new`](Self::new) is final and does not.
    ///
    /// ```
    /// use pi_runtime::{ToolError, tool::ToolErrorKind};
    ///
    /// let error = ToolError::retry("No user named \"ada\": list the users first");
    /// assert_eq!(error.kind(), ToolErrorKind::Retry);
    /// ```
    pub fn retry(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
            kind: ToolErrorKind::Retry,
        }
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ToolErrorKind {
        self.kind
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

impl fmt::Debug for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.message, f)
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// A [`ValidationError`] keeps its kind: `?` on `deserialize_arguments` in a tool reports
/// invalid arguments, not a failed tool.
impl<E: std::error::Error + 'static> From<E> for ToolError {
    fn from(error: E) -> Self {
        let invalid = (&error as &dyn std::any::Any).is::<ValidationError>();
        let message = error.to_string();
        if invalid {
            ToolError::invalid_arguments(message)
        } else {
            ToolError::new(message)
        }
    }
}

impl From<ToolError> for ToolResult {
    fn from(error: ToolError) -> Self {
        ToolResult::error(error.message)
    }
}

/// Wrap a `Serialize` value to return it as a tool's output: the model sees its compact
/// JSON text, and `structured_content` and `details` carry the value itself (code mode
/// scripts receive it, MCP clients get it as structured content).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Json<T>(pub T);

/// What a `#[tool]` fn may return on success: converted into the [`ToolResult`] the model
/// sees.
///
/// Implemented for `String`, `&str`, `()`, [`ToolResult`], [`Json<T>`],
/// `Vec<ContentBlock>`, numbers, `bool` and `serde_json::Value` (the model sees their JSON
/// text: `3` for `1.0 + 2.0`). A `Result<T, E>` return value with `E: Display` maps `Err` to
/// an error result with that text.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's output",
    label = "this type does not convert into a tool result",
    note = "return `String`, a number, `bool`, `()`, `ToolResult`, `serde_json::Value`, `Json<T>` (for `T: Serialize`) or `Vec<ContentBlock>`, optionally inside `Result<_, E>` with `E: Display`"
)]
pub trait IntoToolResult {
    /// The result the model sees.
    fn into_tool_result(self) -> ToolResult;
}

impl IntoToolResult for ToolResult {
    fn into_tool_result(self) -> ToolResult {
        self
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::text(self)
    }
}

impl IntoToolResult for &str {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::text(self)
    }
}

impl IntoToolResult for () {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::default()
    }
}

impl IntoToolResult for Vec<ContentBlock> {
    fn into_tool_result(self) -> ToolResult {
        ToolResult {
            content: self,
            ..ToolResult::default()
        }
    }
}

/// What [`Json<T>`] carries out of a tool: a `T: Serialize`. Implemented for every such `T`;
/// it exists so that a `T` without `Serialize` is reported with the fix for tool outputs,
/// `#[tool_args(serialize)]`, rather than serde's generic advice.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's JSON output: it does not implement `serde::Serialize`",
    label = "`Json<{Self}>` is serialized for the model",
    note = "derive it: put `#[pi_runtime::tool_args(serialize)]` on the type (or `#[derive(serde::Serialize)]`)"
)]
pub trait JsonOutput: Serialize {}

// `do_not_recommend`: an unmet bound is reported as `T: JsonOutput` with the message above,
// not as rustc's `T: Serialize` through this impl (which suggests a bare serde derive).
#[diagnostic::do_not_recommend]
impl<T: Serialize + ?Sized> JsonOutput for T {}

impl<T: JsonOutput> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> ToolResult {
        match serde_json::to_value(&self.0) {
            // The value is the structured content too: what code mode scripts receive (the
            // tool declares `T`'s schema as its output) and what MCP clients get.
            Ok(value) => ToolResult {
                content: vec![ContentBlock::text(value.to_string())],
                structured_content: Some(value.clone()),
                details: Some(value),
                ..ToolResult::default()
            },
            Err(error) => {
                ToolResult::error(format!("could not serialize the tool output: {error}"))
            }
        }
    }
}

/// A JSON value: the model sees its compact JSON text, and `details` carries the value.
impl IntoToolResult for Value {
    fn into_tool_result(self) -> ToolResult {
        ToolResult {
            content: vec![ContentBlock::text(self.to_string())],
            details: Some(self),
            ..ToolResult::default()
        }
    }
}

impl IntoToolResult for bool {
    fn into_tool_result(self) -> ToolResult {
        Value::Bool(self).into_tool_result()
    }
}

/// Integers: the model sees their decimal text (`3`), `details` the number.
macro_rules! integer_results {
    ($($ty:ty),*) => {$(
        impl IntoToolResult for $ty {
            fn into_tool_result(self) -> ToolResult {
                Value::from(self).into_tool_result()
            }
        }
    )*};
}

integer_results!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

/// Floats as JavaScript shows them, which is what the reference's models see: an integral
/// value has no fraction (`3`, not `3.0`). NaN and the infinities are not JSON: the model
/// sees `NaN`, `Infinity` or `-Infinity`, and `details` is `null`.
impl IntoToolResult for f64 {
    fn into_tool_result(self) -> ToolResult {
        match crate::args::number_value(self) {
            Some(number) => number.into_tool_result(),
            None => {
                let text = if self.is_nan() {
                    "NaN"
                } else if self > 0.0 {
                    "Infinity"
                } else {
                    "-Infinity"
                };
                ToolResult {
                    content: vec![ContentBlock::text(text)],
                    details: Some(Value::Null),
                    ..ToolResult::default()
                }
            }
        }
    }
}

impl IntoToolResult for f32 {
    fn into_tool_result(self) -> ToolResult {
        f64::from(self).into_tool_result()
    }
}

/// The error side of a `#[tool]` fn's `Result`: anything `Display`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's error",
    label = "tool errors must implement `Display`",
    note = "the error's `Display` text is what the model sees"
)]
pub trait IntoToolError {
    /// The error the model sees.
    fn into_tool_error(self) -> ToolError;
}

/// A `ToolError` keeps its kind (a retry stays a retry); any other error is final.
impl<E: fmt::Display + 'static> IntoToolError for E {
    fn into_tool_error(self) -> ToolError {
        // Moved out through an `Option`: `Any` downcasts references, not values.
        let mut slot = Some(self);
        let own = (&mut slot as &mut dyn std::any::Any)
            .downcast_mut::<Option<ToolError>>()
            .and_then(Option::take);
        own.unwrap_or_else(|| ToolError::new(slot.map_or_else(String::new, |e| e.to_string())))
    }
}
