//! One call of the `tool_search` tool: the arguments' checks, the candidates
//! (searchable tools that are not active), the ranking and the result text the model reads.

use serde_json::{Value, json};

use super::document::{ToolNamespace, for_each_piece};
use super::rank::{Builder, DocId, Match, Strings, ToolSearchIndex};
use super::{DEFAULT_LIMIT, MAX_QUERY_CHARS, MAX_SUMMARIES_BYTES, MAX_SUMMARY_CHARS};
use crate::js::js_trim;
use crate::tool::{Exposure, ToolResult};

/// A registered tool as tool search reads it. Build one from a tuple
/// `(name, description, parameters, exposure, namespace)`.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct RegisteredTool<'a> {
    /// The name the model calls.
    pub name: &'a str,
    /// The tool's description.
    pub description: &'a str,
    /// The parameters' JSON Schema.
    pub parameters: &'a Value,
    /// Only [`Exposure::Codemode`] and [`Exposure::Deferred`] tools are searched.
    pub exposure: Exposure,
    /// The tool's namespace, if any.
    pub namespace: Option<&'a ToolNamespace>,
}

impl<'a> RegisteredTool<'a> {
    /// A tool without a namespace.
    pub fn new(
        name: &'a str,
        description: &'a str,
        parameters: &'a Value,
        exposure: Exposure,
    ) -> Self {
        RegisteredTool {
            name,
            description,
            parameters,
            exposure,
            namespace: None,
        }
    }

    /// With a namespace.
    pub fn with_namespace(mut self, namespace: &'a ToolNamespace) -> Self {
        self.namespace = Some(namespace);
        self
    }
}

impl<'a>
    From<(
        &'a str,
        &'a str,
        &'a Value,
        Exposure,
        Option<&'a ToolNamespace>,
    )> for RegisteredTool<'a>
{
    fn from(
        (name, description, parameters, exposure, namespace): (
            &'a str,
            &'a str,
            &'a Value,
            Exposure,
            Option<&'a ToolNamespace>,
        ),
    ) -> Self {
        RegisteredTool {
            name,
            description,
            parameters,
            exposure,
            namespace,
        }
    }
}

/// Why a call fails; the `Display` text is what the model reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolSearchError {
    /// The query is blank after JavaScript's `trim` (which also removes U+FEFF, U+00A0,
    /// U+3000 and the line separators), or not a string.
    #[error("query must not be empty")]
    EmptyQuery,
    /// The limit is not a positive integer.
    #[error("limit must be a positive integer")]
    InvalidLimit,
    /// The query is longer than [`MAX_QUERY_CHARS`] characters.
    #[error("query must be at most {MAX_QUERY_CHARS} characters; this one has {chars}")]
    QueryTooLong {
        /// The query's length, in characters.
        chars: usize,
    },
}

/// What a successful call gives: the matches (loaded, in rank order) and the result text.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolSearchOutput {
    /// The tools to activate, best first.
    pub matches: Vec<Match>,
    /// `Loaded <n> tool<s>. They are available from your next call:` and a line
    /// `- <name>: <first line of the description>` per match, or `No matching tools found.`
    pub text: String,
}

impl ToolSearchOutput {
    /// The names to append to the active tools, in order.
    pub fn loaded(&self) -> impl Iterator<Item = &str> {
        self.matches.iter().map(|m| m.name.as_str())
    }

    /// The tool result the model reads: the text, and details `{"loaded": [names]}`.
    pub fn into_tool_result(self) -> ToolResult {
        let loaded: Vec<&str> = self.loaded().collect();
        let details = json!({ "loaded": loaded });
        ToolResult::text(self.text).with_details(details)
    }
}

/// The searchable tools of a tool set, indexed. Build it when tools are registered or
/// removed; activation does not need a new one, since every search is told which tools are
/// active and ranks as if they were not there.
///
/// ```
/// use pi_runtime::tool::Exposure;
/// use pi_runtime::tool_search::{ToolNamespace, ToolSearch};
/// use serde_json::json;
///
/// let slack = ToolNamespace::new("mcp__slack").with_description("Slack workspace");
/// let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
/// let search = ToolSearch::new([
///     ("read", "Read a file", &schema, Exposure::Direct, None),
///     ("mcp__slack__post_message", "Post a message to a channel", &schema,
///      Exposure::Deferred, Some(&slack)),
///     ("mcp__slack__list_channels", "List public channels", &schema,
///      Exposure::Codemode, Some(&slack)),
/// ]);
///
/// let active = ["read"];
/// let output = search.call(&json!({"query": "post to slack", "limit": 1}), &active)?;
/// assert_eq!(output.loaded().collect::<Vec<_>>(), ["mcp__slack__post_message"]);
/// assert_eq!(
///     output.text,
///     "Loaded 1 tool. They are available from your next call:\n\
///      - mcp__slack__post_message: Post a message to a channel"
/// );
///
/// // Once active, a tool is not found again.
/// let active = ["read", "mcp__slack__post_message"];
/// let output = search.call(&json!({"query": "slack"}), &active)?;
/// assert_eq!(output.loaded().collect::<Vec<_>>(), ["mcp__slack__list_channels"]);
///
/// assert_eq!(
///     search.call(&json!({"query": "\u{3000}"}), &active).unwrap_err().to_string(),
///     "query must not be empty"
/// );
/// # Ok::<(), pi_runtime::tool_search::ToolSearchError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolSearch {
    index: ToolSearchIndex,
    /// Per document, the first line of its trimmed description (pi looks the description up
    /// by name: the first tool with the name gives it).
    summaries: Strings,
}

impl ToolSearch {
    /// Index the tools with exposure [`Exposure::Codemode`] or [`Exposure::Deferred`], in
    /// registration order; the others are left out.
    pub fn new<'a, T>(tools: impl IntoIterator<Item = T>) -> Self
    where
        T: Into<RegisteredTool<'a>>,
    {
        let tools = tools.into_iter();
        let mut search = ToolSearch::default();
        let mut first_description: foldhash::HashMap<&str, &str> = foldhash::HashMap::default();
        let mut builder = Builder::with_capacity(tools.size_hint().0);
        for tool in tools {
            let tool = tool.into();
            if !tool.exposure.is_searchable() {
                continue;
            }
            let description = *first_description
                .entry(tool.name)
                .or_insert(tool.description);
            search
                .summaries
                .push_with(|out| push_summary(out, first_line(js_trim(description))));
            let namespace = builder.namespace_of(tool.namespace);
            builder.add(
                tool.name,
                |piece| for_each_piece(tool.description, tool.parameters, piece),
                namespace,
            );
        }
        search.index = builder.finish();
        search
    }

    /// The index of the searchable tools.
    pub fn index(&self) -> &ToolSearchIndex {
        &self.index
    }

    /// The best `limit` matches of `query` among the searchable tools not in `active`.
    pub fn search<S: AsRef<str>>(&self, query: &str, limit: usize, active: &[S]) -> Vec<Match> {
        let excluded = self.documents_named(active);
        self.index
            .rank(query, limit, &excluded)
            .into_iter()
            .map(|ranked| self.index.to_match(ranked))
            .collect()
    }

    /// One call with the validated arguments `{"query": string, "limit"?: number}`, while the
    /// tools in `active` are active: [`ToolSearchArgs::from_arguments`], then
    /// [`ToolSearch::run`].
    pub fn call<S: AsRef<str>>(
        &self,
        arguments: &Value,
        active: &[S],
    ) -> Result<ToolSearchOutput, ToolSearchError> {
        Ok(self.run(ToolSearchArgs::from_arguments(arguments)?, active))
    }

    /// One call with checked arguments, while the tools in `active` are active. The matches
    /// are the tools to activate (append them to the active tools, so the next request
    /// declares them).
    pub fn run<S: AsRef<str>>(&self, args: ToolSearchArgs<'_>, active: &[S]) -> ToolSearchOutput {
        let excluded = self.documents_named(active);
        let ranked = self.index.rank(args.query, args.limit, &excluded);
        let matches: Vec<Match> = ranked.iter().map(|&r| self.index.to_match(r)).collect();
        let text = result_text(
            matches
                .iter()
                .zip(&ranked)
                .map(|(m, r)| (m.name.as_str(), self.summaries.get(r.document))),
        );
        ToolSearchOutput { matches, text }
    }

    /// The documents whose names are in `names`, ascending.
    fn documents_named<S: AsRef<str>>(&self, names: &[S]) -> Vec<DocId> {
        let mut documents: Vec<DocId> = names
            .iter()
            .flat_map(|name| self.index.documents_named(name.as_ref()))
            .collect();
        documents.sort_unstable();
        documents.dedup();
        documents
    }
}

/// A call's arguments, checked as pi's tool checks them (before it looks at any tool).
///
/// ```
/// use pi_runtime::tool_search::{ToolSearchArgs, ToolSearchError};
/// use serde_json::json;
///
/// let arguments = json!({"query": "slack", "limit": 3});
/// let args = ToolSearchArgs::from_arguments(&arguments)?;
/// assert_eq!((args.query(), args.limit()), ("slack", 3));
/// assert_eq!(ToolSearchArgs::from_arguments(&json!({"query": "slack"}))?.limit(), 8);
/// assert_eq!(
///     ToolSearchArgs::from_arguments(&json!({"query": "slack", "limit": 2.5})),
///     Err(ToolSearchError::InvalidLimit)
/// );
/// # Ok::<(), ToolSearchError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolSearchArgs<'a> {
    query: &'a str,
    limit: usize,
}

impl<'a> ToolSearchArgs<'a> {
    /// From the validated arguments `{"query": string, "limit"?: number}`: a `query` blank
    /// after JavaScript's `trim` (or missing, or not a string) is
    /// [`ToolSearchError::EmptyQuery`]; a `limit` that is missing or `null` is 8, one that is
    /// not a positive integer [`ToolSearchError::InvalidLimit`] (the schema's validation
    /// makes `"3"` the number 3 before this runs).
    pub fn from_arguments(arguments: &'a Value) -> Result<Self, ToolSearchError> {
        let query = arguments.get("query").and_then(Value::as_str).unwrap_or("");
        if js_trim(query).is_empty() {
            return Err(ToolSearchError::EmptyQuery);
        }
        // Counted only past the limit's bytes: a query of at most that many bytes is short.
        if query.len() > MAX_QUERY_CHARS {
            let chars = query.chars().count();
            if chars > MAX_QUERY_CHARS {
                return Err(ToolSearchError::QueryTooLong { chars });
            }
        }
        let limit = limit(arguments.get("limit"))?;
        Ok(ToolSearchArgs { query, limit })
    }

    /// The query, as the model wrote it.
    pub fn query(&self) -> &'a str {
        self.query
    }

    /// How many tools to load at most.
    pub fn limit(&self) -> usize {
        self.limit
    }
}

/// pi's `limit ?? 8`, then a positive integer or the error.
fn limit(limit: Option<&Value>) -> Result<usize, ToolSearchError> {
    let limit = match limit {
        None | Some(Value::Null) => return Ok(DEFAULT_LIMIT),
        Some(limit) => limit.as_f64().ok_or(ToolSearchError::InvalidLimit)?,
    };
    if limit.fract() != 0.0 || limit <= 0.0 {
        return Err(ToolSearchError::InvalidLimit);
    }
    // Saturates: a limit past the number of tools is every match.
    Ok(limit as usize)
}

/// The first line, lines ending at `\n` or `\r\n`.
fn first_line(text: &str) -> &str {
    match text.split_once('\n') {
        Some((line, _)) => line.strip_suffix('\r').unwrap_or(line),
        None => text,
    }
}

/// Append `line`, cut to [`MAX_SUMMARY_CHARS`] characters and `…` when longer.
fn push_summary(out: &mut String, line: &str) {
    match line.char_indices().nth(MAX_SUMMARY_CHARS) {
        Some((cut, _)) => {
            out.push_str(&line[..cut]);
            out.push('…');
        }
        None => out.push_str(line),
    }
}

/// The text the model reads: a line per loaded tool, with its summary while the text is
/// under [`MAX_SUMMARIES_BYTES`], its name alone after.
fn result_text<'a>(loaded: impl ExactSizeIterator<Item = (&'a str, &'a str)>) -> String {
    let count = loaded.len();
    if count == 0 {
        return "No matching tools found.".to_owned();
    }
    let plural = if count == 1 { "" } else { "s" };
    let mut text = format!("Loaded {count} tool{plural}. They are available from your next call:");
    for (name, summary) in loaded {
        text.push_str("\n- ");
        text.push_str(name);
        if text.len() < MAX_SUMMARIES_BYTES {
            text.push_str(": ");
            text.push_str(summary);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search_over(tools: &[(&str, &str, Exposure)]) -> ToolSearch {
        let schema = json!({"type": "object", "properties": {}});
        ToolSearch::new(
            tools
                .iter()
                .map(|&(name, description, exposure)| (name, description, &schema, exposure, None)),
        )
    }

    #[test]
    fn only_codemode_and_deferred_tools_not_active_are_found() {
        let search = search_over(&[
            ("direct_file", "Read a file", Exposure::Direct),
            ("hidden_file", "Write a file", Exposure::Hidden),
            ("model_file", "Find a file", Exposure::ModelOnly),
            ("codemode_file", "Delete a file", Exposure::Codemode),
            ("deferred_file", "Move a file", Exposure::Deferred),
            ("loaded_file", "Copy a file", Exposure::Deferred),
        ]);
        let output = search
            .call(&json!({"query": "file"}), &["loaded_file"])
            .expect("a valid call");
        assert_eq!(
            output.loaded().collect::<Vec<_>>(),
            ["codemode_file", "deferred_file"]
        );
        // The scores of a search over the two candidates only.
        let score = (output.matches[0].score * 1e6).round() / 1e6;
        assert_eq!(score, 0.729286);
        assert_eq!(
            output.text,
            "Loaded 2 tools. They are available from your next call:\n\
             - codemode_file: Delete a file\n- deferred_file: Move a file"
        );
        let result = output.into_tool_result();
        assert_eq!(
            result.details,
            Some(json!({"loaded": ["codemode_file", "deferred_file"]}))
        );
    }

    #[test]
    fn argument_errors() {
        let search = search_over(&[("t", "tool", Exposure::Deferred)]);
        let none: [&str; 0] = [];
        let error = |arguments: Value| search.call(&arguments, &none).err();
        assert_eq!(
            error(json!({"query": " \t\n\u{feff}\u{a0}\u{2028}"})),
            Some(ToolSearchError::EmptyQuery)
        );
        assert_eq!(
            error(json!({"limit": 3})),
            Some(ToolSearchError::EmptyQuery)
        );
        for limit in [json!(0), json!(-3), json!(2.5), json!("2")] {
            assert_eq!(
                error(json!({"query": "tool", "limit": limit})),
                Some(ToolSearchError::InvalidLimit)
            );
        }
        assert_eq!(error(json!({"query": "tool", "limit": null})), None);
        assert_eq!(error(json!({"query": "tool", "limit": 1e300})), None);
        assert_eq!(
            error(json!({"query": "\u{85}"})),
            None,
            "U+0085 is not JavaScript space"
        );
    }

    #[test]
    fn nothing_found() {
        let search = search_over(&[("t", "tool", Exposure::Deferred)]);
        let output = search
            .call(&json!({"query": "kubernetes"}), &[""; 0])
            .expect("valid");
        assert!(output.matches.is_empty());
        assert_eq!(output.text, "No matching tools found.");
    }

    #[test]
    fn first_lines() {
        assert_eq!(first_line("Fetch a URL.\nReturns"), "Fetch a URL.");
        assert_eq!(first_line("a\r\nb"), "a");
        assert_eq!(first_line("a\r\r\nb"), "a\r");
        assert_eq!(first_line("a\rb"), "a\rb");
    }
}
