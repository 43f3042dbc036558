//! pi 1.6's `tool_search`: the model searches the tools that were not declared
//! to it (exposure [`Codemode`](crate::tool::Exposure::Codemode) or
//! [`Deferred`](crate::tool::Exposure::Deferred), not active) with BM25 over their names,
//! descriptions, schemas and namespaces, and the matches are activated, so the next request
//! declares them.
//!
//! - [`tokenize`]: the words search compares.
//! - [`SearchDocument`], [`ToolNamespace`]: what search reads of a tool.
//! - [`ToolSearchIndex`]: the ranking over documents indexed once.
//! - [`ToolSearch`]: the tool's call over a tool set: checks, candidates, result text.
//! - [`definition`] and the constants: the tool as the model sees it.
//!
//! ```
//! use pi_runtime::tool::Exposure;
//! use pi_runtime::tool_search::{self, ToolSearch};
//! use serde_json::json;
//!
//! let empty = json!({"type": "object", "properties": {}});
//! let weather = json!({"type": "object", "properties": {
//!     "city": {"type": "string", "description": "City name"}}});
//! // Built when the tool set changes, not per call.
//! let search = ToolSearch::new([
//!     ("get_forecast", "Weather forecast for a city", &weather, Exposure::Deferred, None),
//!     ("send_mail", "Send an email", &empty, Exposure::Deferred, None),
//! ]);
//!
//! // A call, with the arguments the pipeline validated against `tool_search::parameters()`.
//! let active: Vec<String> = vec![tool_search::NAME.to_owned()];
//! let output = search.call(&json!({"query": "weather in a city"}), &active)?;
//! assert_eq!(output.loaded().collect::<Vec<_>>(), ["get_forecast"]);
//! assert_eq!(
//!     output.text,
//!     "Loaded 1 tool. They are available from your next call:\n\
//!      - get_forecast: Weather forecast for a city"
//! );
//! # Ok::<(), tool_search::ToolSearchError>(())
//! ```

mod call;
#[cfg(feature = "icu-segmenter")]
mod cjk;
mod document;
mod rank;
#[cfg(feature = "icu-segmenter")]
mod segment;
mod tokenize;
mod tool;

use serde_json::{Value, json};

use crate::tool::{Exposure, Tool};

pub use call::{RegisteredTool, ToolSearch, ToolSearchArgs, ToolSearchError, ToolSearchOutput};
pub use document::{SearchDocument, ToolNamespace};
pub use rank::{Match, ToolSearchIndex};
pub use tokenize::tokenize;
pub use tool::ToolSearchTool;

/// The tool's name.
pub const NAME: &str = "tool_search";

/// The tool's label.
pub const LABEL: &str = "tool_search";

/// The tool's line in the system prompt.
pub const PROMPT_SNIPPET: &str = "Search for tools that are not loaded yet and load the matches";

/// What the model reads about the tool. It does not list the searchable tools, so it stays
/// the same while tools are registered (when MCP servers connect, for example).
pub const DESCRIPTION: &str = "# Tool discovery\n\nSearches over deferred tool metadata with BM25 and exposes matching tools for the next model call.\n\nSome of the tools, such as tools of MCP servers, may not have been provided to you upfront, and you should use this tool (`tool_search`) to search for the required tools. For MCP tool discovery, always use `tool_search`.";

/// The tool's exposure: declared to the model while active (it is registered inactive),
/// never called from scripts.
pub const EXPOSURE: Exposure = Exposure::ModelOnly;

/// How many tools a call loads at most when it names no limit.
pub const DEFAULT_LIMIT: usize = 8;

/// The longest query a call may make, in characters (pi has no limit). A query of words is
/// far shorter; a longer one fails with [`ToolSearchError::QueryTooLong`], so that one call
/// cannot keep a thread ranking for long.
pub const MAX_QUERY_CHARS: usize = 1_000;

/// The most characters of a tool's summary (the first line of its description) the result
/// repeats; a longer one is cut and ends with `…` (pi repeats the whole line).
pub const MAX_SUMMARY_CHARS: usize = 500;

/// The most bytes of result text that carry summaries: once the text is this long, the
/// remaining loaded tools are listed by name only (a call with a large `limit` over many
/// tools would otherwise repeat every summary).
pub const MAX_SUMMARIES_BYTES: usize = 32 * 1024;

/// The parameters' JSON Schema: a required `query` string and an optional `limit` number.
///
/// ```
/// use pi_runtime::tool_search;
///
/// assert_eq!(
///     tool_search::parameters().to_string(),
///     r#"{"type":"object","required":["query"],"properties":{"query":{"type":"string","description":"Search query for deferred tools."},"limit":{"type":"number","description":"Maximum number of tools to return. Defaults to 8."}}}"#
/// );
/// ```
pub fn parameters() -> Value {
    json!({
        "type": "object",
        "required": ["query"],
        "properties": {
            "query": {"type": "string", "description": "Search query for deferred tools."},
            "limit": {
                "type": "number",
                "description": "Maximum number of tools to return. Defaults to 8."
            }
        }
    })
}

/// The tool as a request declares it: [`NAME`], [`DESCRIPTION`], [`parameters`]. Validate a
/// call's arguments with it (its schema compiles once per `Tool`; keep one).
///
/// ```
/// use pi_runtime::tool_search;
///
/// let tool = tool_search::definition();
/// assert_eq!(tool.name, "tool_search");
/// assert_eq!(tool.validate(&serde_json::json!({"query": "x", "limit": "3"}))?["limit"], 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn definition() -> Tool {
    Tool::new(NAME, DESCRIPTION, parameters())
}
