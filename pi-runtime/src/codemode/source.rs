//! The script text: JavaScript, optionally preceded by one `// @options:` line
//! (pi-codemode's `parseCodemodeSource`).

use serde_json::Value;

use crate::js::{is_js_space, js_trim};

/// The prefix of the options line.
pub const OPTIONS_PREFIX: &str = "// @options:";
const SUPPORTED_FIELDS: &str = "`max_output_tokens` and `timeout_ms`";
/// The largest `timeout_ms`: the largest delay JavaScript's `setTimeout` takes.
pub const MAX_TIMEOUT_MS: u64 = 2_147_483_647;
/// The time limit of a script whose options line sets none: 60 seconds, the value the tool's
/// description shows. A longer one is opt-in, per script (`// @options: {"timeout_ms": N}`, up
/// to [`MAX_TIMEOUT_MS`]) or per tool ([`CodemodeTool::with_timeout_ms`](super::CodemodeTool::with_timeout_ms)).
pub const DEFAULT_TIMEOUT_MS: u64 = 60_000;
/// JavaScript's `Number.MAX_SAFE_INTEGER`.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// The Lark grammar of the script text, for providers that constrain tool input to a grammar.
/// It fixes only the shape of the options line.
pub const SOURCE_GRAMMAR: &str = r"
start: options_source | plain_source
options_source: OPTIONS_LINE NEWLINE SOURCE
plain_source: SOURCE

OPTIONS_LINE: /[ \t]*\/\/ @options:[^\r\n]*/
NEWLINE: /\r?\n/
SOURCE: /[\s\S]+/
";

/// A parsed script text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodemodeSource {
    /// The JavaScript: the whole text, or the text from the options line's `\n` on.
    pub code: String,
    /// What the options line set.
    pub options: SourceOptions,
}

/// The fields of an options line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SourceOptions {
    /// `max_output_tokens`: the output budget, 4 characters a token (default 10000).
    pub max_output_tokens: Option<u64>,
    /// `timeout_ms`: the script's time limit (default: the tool's, [`DEFAULT_TIMEOUT_MS`]
    /// unless set otherwise).
    pub timeout_ms: Option<u64>,
}

/// Why a script text was refused; its message is the tool error the model sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SourceError {
    message: String,
}

impl SourceError {
    fn new(message: impl Into<String>) -> Self {
        SourceError {
            message: message.into(),
        }
    }

    /// The text the model sees.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Split the optional first-line `// @options: {...}` from the script.
///
/// # Errors
/// A blank text, an options line that is not the first line, an options line with no code
/// after it, and options that are not a JSON object with valid `max_output_tokens` and
/// `timeout_ms` fields, each with pi's message.
///
/// ```
/// use pi_runtime::__conformance::parse_codemode_source;
///
/// let source = parse_codemode_source("// @options: {\"timeout_ms\": 5000}\nreturn 1;").unwrap();
/// assert_eq!(source.code, "\nreturn 1;");
/// assert_eq!(source.options.timeout_ms, Some(5000));
/// let error = parse_codemode_source("return 1;\n// @options: {}").unwrap_err();
/// assert_eq!(
///     error.message(),
///     "The // @options: line must be the first line of the input; found one on line 2"
/// );
/// ```
pub fn parse_codemode_source(input: &str) -> Result<CodemodeSource, SourceError> {
    if js_trim(input).is_empty() {
        return Err(SourceError::new(
            "Expected JavaScript source text (non-empty). Provide JS only, optionally with a first line `// @options: {\"max_output_tokens\": 1000}`.",
        ));
    }
    let starts_options = |line: &str| {
        line.trim_start_matches(is_js_space)
            .starts_with(OPTIONS_PREFIX)
    };
    if let Some(index) = input.split('\n').skip(1).position(starts_options) {
        return Err(SourceError::new(format!(
            "The {OPTIONS_PREFIX} line must be the first line of the input; found one on line {}",
            index + 2
        )));
    }
    let (first_line, code) = match input.find('\n') {
        Some(newline) => (&input[..newline], &input[newline..]),
        None => (input, ""),
    };
    let first_line = first_line.strip_suffix('\r').unwrap_or(first_line);
    let Some(directive) = first_line
        .trim_start_matches(is_js_space)
        .strip_prefix(OPTIONS_PREFIX)
    else {
        return Ok(CodemodeSource {
            code: input.to_owned(),
            options: SourceOptions::default(),
        });
    };
    if js_trim(code).is_empty() {
        return Err(SourceError::new(
            "The @options line must be followed by JavaScript source on subsequent lines",
        ));
    }
    Ok(CodemodeSource {
        code: code.to_owned(),
        options: parse_options(js_trim(directive))?,
    })
}

fn not_an_object() -> SourceError {
    SourceError::new(format!(
        "@options must be a JSON object with supported fields {SUPPORTED_FIELDS}"
    ))
}

fn parse_options(directive: &str) -> Result<SourceOptions, SourceError> {
    if directive.is_empty() {
        return Err(not_an_object());
    }
    let value: Value = serde_json::from_str(directive).map_err(|error| {
        SourceError::new(format!(
            "@options must be valid JSON with supported fields {SUPPORTED_FIELDS}: {error}"
        ))
    })?;
    let Value::Object(fields) = value else {
        return Err(not_an_object());
    };
    // `Object.keys` order: integer-like keys first, in numeric order.
    let mut keys: Vec<&String> = fields.keys().collect();
    keys.sort_by_key(|key| array_index(key).map_or((1, 0), |index| (0, index)));
    if let Some(key) = keys
        .into_iter()
        .find(|key| !matches!(key.as_str(), "max_output_tokens" | "timeout_ms"))
    {
        return Err(SourceError::new(format!(
            "@options only supports {SUPPORTED_FIELDS}; got `{key}`"
        )));
    }
    let mut options = SourceOptions::default();
    if let Some(tokens) = fields.get("max_output_tokens") {
        options.max_output_tokens = Some(safe_integer(tokens).ok_or_else(|| {
            SourceError::new(
                "@options field `max_output_tokens` must be a non-negative safe integer",
            )
        })?);
    }
    if let Some(timeout) = fields.get("timeout_ms") {
        options.timeout_ms = Some(
            safe_integer(timeout)
                .filter(|ms| (1..=MAX_TIMEOUT_MS).contains(ms))
                .ok_or_else(|| {
                    SourceError::new(format!(
                        "@options field `timeout_ms` must be a positive integer up to {MAX_TIMEOUT_MS}"
                    ))
                })?,
        );
    }
    Ok(options)
}

/// The array index a key is to JavaScript (`"0"`, `"17"`; not `"017"`).
fn array_index(key: &str) -> Option<u32> {
    let index: u32 = key.parse().ok()?;
    (index.to_string() == key && index < u32::MAX).then_some(index)
}

/// A JSON number that is a non-negative safe integer (`-0` and `1e3` count).
fn safe_integer(value: &Value) -> Option<u64> {
    let x = value.as_f64()?;
    // The bounds make the cast exact.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    (x.fract() == 0.0 && (0.0..=MAX_SAFE_INTEGER).contains(&x)).then_some(x as u64)
}
