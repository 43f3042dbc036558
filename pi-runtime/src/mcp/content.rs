//! What the model sees of an MCP `tools/call` result: content conversion, the
//! error text, the 20 KB output limit and the details, as pi's MCP extension makes them.

use std::fmt;

use serde_json::{Map, Value};

use super::McpError;
use crate::js::{js_to_fixed_1, js_trim};
use crate::message::ContentBlock;
use crate::tool::OutputSaver;
use crate::tool::ToolResult;
use crate::tool::output::{cap_text, joined_text};

/// The joined text of a result above this many UTF-8 bytes is cut: its head and tail are
/// kept, and the full text is saved to a file the model is told about.
pub const MCP_OUTPUT_MAX_BYTES: usize = 20 * 1024;

/// How one result is converted.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct ResultOptions<'a> {
    /// The server offers resources, so resource links say how to read them.
    pub readable_resources: bool,
    /// Where saved files go.
    pub saver: &'a dyn OutputSaver,
}

impl fmt::Debug for ResultOptions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResultOptions")
            .field("readable_resources", &self.readable_resources)
            .finish_non_exhaustive()
    }
}

impl<'a> ResultOptions<'a> {
    /// Options that save files with `saver` and do not mention resource reading.
    pub fn new(saver: &'a dyn OutputSaver) -> Self {
        ResultOptions {
            readable_resources: false,
            saver,
        }
    }

    /// Say whether the server's resources are readable.
    #[must_use]
    pub fn with_readable_resources(mut self, readable: bool) -> Self {
        self.readable_resources = readable;
        self
    }
}

/// Convert an MCP `tools/call` result (the JSON the server sent) into the result the model
/// sees, as pi's MCP extension does. `tool` is the MCP tool's own name.
///
/// ```
/// use pi_runtime::__conformance::{ResultOptions, convert_result};
/// use pi_runtime::tool::TempFileSaver;
/// use serde_json::json;
///
/// let saver = TempFileSaver::new();
/// let result = convert_result(
///     "github",
///     "create_issue",
///     &json!({"content": [], "isError": true}),
///     ResultOptions::new(&saver),
/// )?;
/// assert!(result.is_error);
/// assert_eq!(result.text_content(), "MCP tool github/create_issue returned an error");
/// assert_eq!(result.details, Some(json!({"server": "github", "tool": "create_issue"})));
/// # Ok::<(), pi_runtime::mcp::McpError>(())
/// ```
///
/// # Errors
/// [`McpError::InvalidResult`] when the result is not an object or its `content` is not an
/// array.
pub fn convert_result(
    server: &str,
    tool: &str,
    result: &Value,
    options: ResultOptions<'_>,
) -> Result<ToolResult, McpError> {
    let result = result.as_object().ok_or(McpError::InvalidResult)?;
    let blocks: &[Value] = match result.get("content") {
        None => &[],
        Some(Value::Array(blocks)) => blocks,
        Some(_) => return Err(McpError::InvalidResult),
    };
    let is_error = result.get("isError").is_some_and(truthy);
    let mut content: Vec<ContentBlock> = blocks
        .iter()
        .map(|block| block_content(server, block, options))
        .collect();
    if blocks.is_empty()
        && let Some(structured) = result.get("structuredContent")
    {
        content.push(ContentBlock::text(
            serde_json::to_string_pretty(structured).unwrap_or_default(),
        ));
    }
    if is_error && joined_text(&content).is_empty() {
        content.push(ContentBlock::text(format!(
            "MCP tool {server}/{tool} returned an error"
        )));
    }
    let mut details = Map::new();
    details.insert("server".into(), Value::String(server.to_owned()));
    details.insert("tool".into(), Value::String(tool.to_owned()));
    if let Some((cut, path)) = cap_text(&content, MCP_OUTPUT_MAX_BYTES, options.saver) {
        content = cut;
        if let Some(path) = path {
            details.insert("fullOutputPath".into(), Value::String(path));
        }
    }
    Ok(ToolResult {
        content,
        details: Some(Value::Object(details)),
        is_error,
        ..ToolResult::default()
    })
}

/// JavaScript truthiness.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0 && !x.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// A string field, or `undefined` as JavaScript's template literals print a missing one.
fn js_text(value: Option<&Value>) -> String {
    match value {
        None => "undefined".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) => "null".to_owned(),
        Some(other) => other.to_string(),
    }
}

fn block_content(server: &str, block: &Value, options: ResultOptions<'_>) -> ContentBlock {
    let field = |key: &str| block.get(key);
    let text_of = |key: &str| field(key).and_then(Value::as_str);
    match text_of("type") {
        Some("text") => ContentBlock::text(text_of("text").unwrap_or_default()),
        Some("image") => ContentBlock::image(
            text_of("data").unwrap_or_default(),
            text_of("mimeType").unwrap_or_default(),
        ),
        Some("audio") => {
            ContentBlock::text(format!("[audio {} omitted]", js_text(field("mimeType"))))
        }
        Some("resource_link") => ContentBlock::text(resource_link(server, block, options)),
        Some("resource") => embedded_resource(field("resource"), options),
        _ => ContentBlock::text(format!(
            "[unsupported MCP content {}]",
            js_text(field("type"))
        )),
    }
}

fn resource_link(server: &str, block: &Value, options: ResultOptions<'_>) -> String {
    let title = match block.get("title") {
        None | Some(Value::Null) => block.get("name"),
        title => title,
    };
    let mut text = format!(
        "[Resource {} \"{}\"",
        js_text(block.get("uri")),
        js_text(title)
    );
    let mut parts = Vec::new();
    if let Some(mime) = block.get("mimeType").filter(|m| truthy(m)) {
        parts.push(js_text(Some(mime)));
    }
    if let Some(size) = block.get("size").and_then(Value::as_f64) {
        parts.push(format_size(size));
    }
    if !parts.is_empty() {
        text.push_str(&format!(" ({})", parts.join(", ")));
    }
    if let Some(description) = block.get("description").filter(|d| truthy(d)) {
        text.push_str(&format!(": {}", js_text(Some(description))));
    }
    if options.readable_resources {
        text.push_str(&format!(
            ". Read it with read_mcp_resource (server \"{server}\")"
        ));
    }
    text.push(']');
    text
}

fn embedded_resource(resource: Option<&Value>, options: ResultOptions<'_>) -> ContentBlock {
    let empty = Map::new();
    let resource = resource.and_then(Value::as_object).unwrap_or(&empty);
    let uri = js_text(resource.get("uri"));
    let mime = resource.get("mimeType").and_then(Value::as_str);
    let is_image = mime.is_some_and(|m| m.starts_with("image/"));
    let mime_text = match resource.get("mimeType") {
        None | Some(Value::Null) => "unknown type".to_owned(),
        some => js_text(some),
    };
    let blob = resource.get("blob");
    if let Some(blob) = blob.filter(|_| !is_image) {
        let bytes = decode_base64(blob.as_str().unwrap_or_default());
        if mime.is_some_and(is_text_mime_type) {
            return ContentBlock::text(String::from_utf8_lossy(&bytes));
        }
        let what = format!("{mime_text}, {}", format_size(bytes.len() as f64));
        return ContentBlock::text(match options.saver.save(&extension_of(&uri), &bytes) {
            Ok(path) => format!(
                "[Binary resource {uri} ({what}) saved to {}]",
                path.display()
            ),
            Err(error) => format!("[Binary resource {uri} ({what}) could not be saved: {error}]"),
        });
    }
    if let Some(text) = resource.get("text") {
        return ContentBlock::text(text.as_str().unwrap_or_default());
    }
    if let Some(blob) = blob {
        return ContentBlock::image(blob.as_str().unwrap_or_default(), mime.unwrap_or_default());
    }
    // pi answers an image block without data here, which no provider accepts: the model is
    // told what was left out instead.
    ContentBlock::text(format!("[binary resource {uri} ({mime_text}) omitted]"))
}

/// `text/*`, `application/json`, `*+json` or `*+xml`, judged on the part before `;`.
fn is_text_mime_type(mime: &str) -> bool {
    let kind = js_trim(mime.split(';').next().unwrap_or_default()).to_lowercase();
    kind.starts_with("text/")
        || kind == "application/json"
        || kind.ends_with("+json")
        || kind.ends_with("+xml")
}

/// Base64 decoded as Node's `Buffer.from(text, "base64")` does: whitespace skipped, the URL-safe
/// alphabet accepted, padding optional, decoding stopping at `=` or any other character.
fn decode_base64(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for byte in text.bytes() {
        let value = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c' => continue,
            _ => break,
        };
        acc = (acc << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

/// The extension of a saved resource: the end of the URI's path (the URI itself when it is
/// not a URL) when that is `.` and 1 to 8 ASCII letters or digits, else `.bin`.
fn extension_of(uri: &str) -> String {
    let path = url_path(uri).unwrap_or(uri);
    let bytes = path.as_bytes();
    let tail = bytes
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_alphanumeric())
        .count();
    let dot = bytes.len().checked_sub(tail + 1);
    match dot {
        Some(dot) if (1..=8).contains(&tail) && bytes[dot] == b'.' => path[dot..].to_owned(),
        _ => ".bin".to_owned(),
    }
}

/// The path of a URL (`scheme:[//authority]path[?query][#fragment]`), or `None` when the text
/// has no scheme.
fn url_path(uri: &str) -> Option<&str> {
    let colon = uri.find(':')?;
    let scheme = &uri[..colon];
    let mut chars = scheme.chars();
    if !chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        || !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return None;
    }
    let mut rest = &uri[colon + 1..];
    if let Some(after) = rest.strip_prefix("//") {
        let end = after.find(['/', '?', '#']).unwrap_or(after.len());
        rest = &after[end..];
    }
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    Some(&rest[..end])
}

/// pi's `formatSize`: bytes below 1 KiB, then KB and MB with JavaScript's `toFixed(1)`.
fn format_size(size: f64) -> String {
    if size < 1024.0 {
        return format!("{}B", js_number(size));
    }
    if size < 1024.0 * 1024.0 {
        return format!("{}KB", js_to_fixed_1(size / 1024.0));
    }
    format!("{}MB", js_to_fixed_1(size / (1024.0 * 1024.0)))
}

fn js_number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e21 {
        format!("{x:.0}")
    } else {
        x.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_round_ties_up() {
        assert_eq!(format_size(0.0), "0B");
        assert_eq!(format_size(1023.0), "1023B");
        assert_eq!(format_size(2304.0), "2.3KB");
        assert_eq!(format_size(1024.0 * 1023.96), "1024.0KB");
        assert_eq!(format_size(3.1 * 1048576.0), "3.1MB");
    }

    #[test]
    fn base64_as_node_reads_it() {
        assert_eq!(decode_base64("aGk"), b"hi");
        assert_eq!(decode_base64("aG k=\n"), b"hi");
        assert_eq!(decode_base64("-_8="), [0xfb, 0xff]);
    }

    #[test]
    fn extensions() {
        assert_eq!(extension_of("file:///README.md.gz"), ".gz");
        assert_eq!(extension_of("https://x.test/a.tar?x=1.zip#f.png"), ".tar");
        assert_eq!(extension_of("demo://resource/blob"), ".bin");
        assert_eq!(extension_of("notes.verylongext"), ".bin");
        assert_eq!(extension_of("plain.TXT"), ".TXT");
    }
}
