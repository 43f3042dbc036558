//! What tool search reads of a tool: its name, its text (the description, then
//! the descriptions and property names of its parameter schema) and its namespace's text.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::js::js_trim;

/// The group a tool belongs to, such as the MCP server it comes from. Tool search counts a
/// query word in the namespace's name, description or instructions for every tool of the
/// namespace, at a sixth of what a word of the tool's own name counts.
///
/// ```
/// use pi_runtime::tool_search::ToolNamespace;
///
/// let github = ToolNamespace::new("mcp__github")
///     .with_description("GitHub: issues, pull requests and repositories")
///     .with_instructions("Use owner/repo pairs.");
/// assert_eq!(
///     github.search_text(),
///     "mcp__github GitHub: issues, pull requests and repositories Use owner/repo pairs."
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolNamespace {
    /// The namespace's name (for an MCP server, the `mcp__<server>` prefix of its tools).
    pub name: String,
    /// What the namespace is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// How to use its tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

impl ToolNamespace {
    /// A namespace with a name only.
    pub fn new(name: impl Into<String>) -> Self {
        ToolNamespace {
            name: name.into(),
            description: None,
            instructions: None,
        }
    }

    /// With a description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// With instructions.
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// The text search reads: name, description and instructions joined with spaces
    /// (missing ones as empty strings, so their spaces stay).
    pub fn search_text(&self) -> String {
        let description = self.description.as_deref().unwrap_or("");
        let instructions = self.instructions.as_deref().unwrap_or("");
        let mut text =
            String::with_capacity(self.name.len() + description.len() + instructions.len() + 2);
        text.push_str(&self.name);
        text.push(' ');
        text.push_str(description);
        text.push(' ');
        text.push_str(instructions);
        text
    }
}

/// One tool as tool search reads it.
///
/// ```
/// use pi_runtime::tool_search::SearchDocument;
/// use serde_json::json;
///
/// let document = SearchDocument::new(
///     "mcp__github__create_issue",
///     "Create a new issue",
///     &json!({"type": "object", "properties": {
///         "owner": {"type": "string", "description": "Repository owner"},
///         "labels": {"type": "array", "items": {"type": "string"}, "description": "Labels to apply"}
///     }}),
///     None,
/// );
/// assert_eq!(document.text(), "Create a new issue owner Repository owner labels Labels to apply");
/// assert_eq!(document.namespace_text(), "");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchDocument {
    name: String,
    text: String,
    namespace_text: String,
}

impl SearchDocument {
    /// The document of a tool: the description, then from the parameter schema (walked from
    /// the root) for each object node: the target of its local `$ref` (`#` or `#/...`) when
    /// that is an object no reference reached before (the root counts as reached), its
    /// `description`, each property's name followed by the walk of its schema, the walk of
    /// `items`, then of each `anyOf`, `oneOf` and `allOf` variant. Pieces that are blank
    /// (after JavaScript's `trim`) are left out; the others are joined with one space.
    pub fn new(
        name: impl Into<String>,
        description: &str,
        parameters: &Value,
        namespace: Option<&ToolNamespace>,
    ) -> Self {
        let mut text = String::new();
        for_each_piece(description, parameters, |piece| {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(piece);
        });
        SearchDocument {
            name: name.into(),
            text,
            namespace_text: namespace
                .map(ToolNamespace::search_text)
                .unwrap_or_default(),
        }
    }

    /// A document from texts made elsewhere.
    pub fn from_parts(
        name: impl Into<String>,
        text: impl Into<String>,
        namespace_text: impl Into<String>,
    ) -> Self {
        SearchDocument {
            name: name.into(),
            text: text.into(),
            namespace_text: namespace_text.into(),
        }
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The description and the schema's descriptions and property names.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The namespace's name, description and instructions, or empty.
    pub fn namespace_text(&self) -> &str {
        &self.namespace_text
    }
}

/// Call `emit` with each piece of a tool's text that is not blank (after JavaScript's
/// `trim`), in order: the description, then the schema's (see [`SearchDocument::new`]).
pub(crate) fn for_each_piece(description: &str, parameters: &Value, mut emit: impl FnMut(&str)) {
    let mut piece = |piece: &str| {
        if !js_trim(piece).is_empty() {
            emit(piece);
        }
    };
    piece(description);
    schema_pieces(parameters, &mut piece);
}

/// The keywords of a schema node the walk reads.
#[derive(Default)]
struct Keywords<'a> {
    reference: Option<&'a str>,
    description: Option<&'a str>,
    properties: Option<&'a serde_json::Map<String, Value>>,
    items: Option<&'a Value>,
    any_of: &'a [Value],
    one_of: &'a [Value],
    all_of: &'a [Value],
}

/// A step of the schema walk. The walk keeps its own stack: a schema is data from a tool or
/// an MCP server, and its depth must not decide whether the stack overflows.
enum Step<'a> {
    /// Read a schema node.
    Node(&'a Value),
    /// Read a reference's target, unless a reference reached it before.
    Target(&'a Value),
    /// Append a description or a property name.
    Piece(&'a str),
}

/// The pieces of the schema, in pi's order (a depth-first walk).
fn schema_pieces(root: &Value, emit: &mut impl FnMut(&str)) {
    // Targets already reached through a reference, by address: pi keeps the objects in a set,
    // so two spellings of one reference (`#/$defs/A`, `#/%24defs/A`) read it once.
    let mut reached: Vec<*const Value> = vec![root];
    let mut steps = vec![Step::Node(root)];
    while let Some(step) = steps.pop() {
        let node = match step {
            Step::Piece(piece) => {
                emit(piece);
                continue;
            }
            Step::Node(node) => node,
            Step::Target(target) => {
                let address: *const Value = target;
                if reached.contains(&address) {
                    continue;
                }
                reached.push(address);
                target
            }
        };
        let Value::Object(node) = node else { continue };
        // One pass over the keywords (a lookup per keyword costs a hash each).
        let mut keywords = Keywords::default();
        for (key, value) in node {
            match (key.as_str(), value) {
                ("$ref", Value::String(reference)) => keywords.reference = Some(reference),
                ("description", Value::String(description)) => {
                    keywords.description = Some(description)
                }
                ("properties", Value::Object(properties)) => keywords.properties = Some(properties),
                ("items", items) => keywords.items = Some(items),
                ("anyOf", Value::Array(variants)) => keywords.any_of = variants,
                ("oneOf", Value::Array(variants)) => keywords.one_of = variants,
                ("allOf", Value::Array(variants)) => keywords.all_of = variants,
                _ => {}
            }
        }
        // Pushed in reverse, so they are read in order: target, description, properties,
        // items, anyOf, oneOf, allOf.
        for variants in [keywords.all_of, keywords.one_of, keywords.any_of] {
            steps.extend(variants.iter().rev().map(Step::Node));
        }
        if let Some(items) = keywords.items {
            steps.push(Step::Node(items));
        }
        if let Some(properties) = keywords.properties {
            for (name, property) in properties.iter().rev() {
                steps.push(Step::Node(property));
                steps.push(Step::Piece(name));
            }
        }
        if let Some(description) = keywords.description {
            steps.push(Step::Piece(description));
        }
        if let Some(reference) = keywords.reference
            && let Some(target @ Value::Object(_)) = resolve_local_ref(reference, root)
        {
            steps.push(Step::Target(target));
        }
    }
}

/// pi-codemode's `resolveSchemaRef`: `#` or `#/...`, segments split at `/`
/// (empty ones skipped), each percent-decoded as `decodeURIComponent` does (a malformed
/// escape resolves to nothing) and then `~1` → `/`, `~0` → `~`; every step is a key of an
/// object.
pub(crate) fn resolve_local_ref<'a>(reference: &str, root: &'a Value) -> Option<&'a Value> {
    let path = match reference {
        "#" => "",
        _ => reference.strip_prefix("#/")?,
    };
    let mut current = root;
    for segment in path.split('/').filter(|s| !s.is_empty()) {
        let decoded = decode_uri_component(segment)?;
        let key = decoded.replace("~1", "/").replace("~0", "~");
        current = current.as_object()?.get(&key)?;
    }
    Some(current)
}

/// JavaScript's `decodeURIComponent`: every `%XX` escape decoded, `None` where it throws (a
/// `%` without two hex digits, escapes that are not UTF-8).
fn decode_uri_component(segment: &str) -> Option<String> {
    if !segment.contains('%') {
        return Some(segment.to_owned());
    }
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        if byte == b'%' {
            let high = hex_digit(*bytes.get(i + 1)?)?;
            let low = hex_digit(*bytes.get(i + 2)?)?;
            out.push(high << 4 | low);
            i += 3;
        } else {
            out.push(byte);
            i += 1;
        }
    }
    // Literal characters are whole UTF-8 sequences, so an escaped lead byte followed by a
    // literal character, like a lone escaped continuation byte, fails here as it throws in JS.
    String::from_utf8(out).ok()
}

fn hex_digit(byte: u8) -> Option<u8> {
    char::from(byte).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text_of(parameters: Value) -> String {
        SearchDocument::new("t", "Desc", &parameters, None).text
    }

    #[test]
    fn references_are_read_once_and_unreferenced_definitions_never() {
        let schema = json!({"type": "object", "properties": {
            "shape": {"$ref": "#/$defs/Shape"},
            "again": {"$ref": "#/%24defs/Shape"}
        }, "$defs": {
            "Shape": {"description": "A shape with a color", "properties": {
                "tag": {"type": "string"}, "child": {"$ref": "#/$defs/Shape"}}},
            "Unused": {"description": "nested"}
        }});
        assert_eq!(
            text_of(schema),
            "Desc shape A shape with a color tag child again"
        );
    }

    #[test]
    fn the_reference_comes_before_the_node_and_unions_after() {
        let schema = json!({"description": "root", "properties": {
            "x": {"$ref": "#/$defs/X", "description": "own",
                  "items": {"description": "item"},
                  "allOf": [{"description": "all"}], "anyOf": [{"description": "any"}],
                  "oneOf": [{"description": "one"}]}
        }, "$defs": {"X": {"description": "target"}}});
        assert_eq!(text_of(schema), "Desc root x target own item any one all");
    }

    #[test]
    fn the_root_counts_as_reached() {
        let schema = json!({"description": "root", "properties": {"self": {"$ref": "#"}}});
        assert_eq!(text_of(schema), "Desc root self");
    }

    #[test]
    fn blank_pieces_are_dropped() {
        let schema = json!({"description": " \u{feff} ", "properties": {" ": {}, "a": true}});
        assert_eq!(text_of(schema), "Desc a");
        assert_eq!(SearchDocument::new("t", "", &json!({}), None).text, "");
    }

    #[test]
    fn local_references() {
        let root = json!({"a/b": {"~": {"x": 1}}, "%": {"é": true}, "list": [{"x": 1}]});
        assert_eq!(resolve_local_ref("#", &root), Some(&root));
        assert_eq!(resolve_local_ref("#/a~1b/~0//x", &root), Some(&json!(1)));
        assert_eq!(resolve_local_ref("#/%25/%C3%A9", &root), Some(&json!(true)));
        assert_eq!(resolve_local_ref("#/%25/%C3", &root), None);
        assert_eq!(resolve_local_ref("#/%zz", &root), None);
        assert_eq!(resolve_local_ref("#/list/0", &root), None);
        assert_eq!(resolve_local_ref("other.json#/a", &root), None);
        assert_eq!(resolve_local_ref("#a", &root), None);
    }
}
