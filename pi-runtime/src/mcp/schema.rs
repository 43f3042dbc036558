//! What an MCP server's `tools/list` entry becomes in the agent: name, label,
//! description, parameters, output schema and annotation hints, exactly as pi's MCP extension
//! makes them.

use serde_json::{Map, Value, json};

use super::McpError;
use super::naming::assign_names;
use crate::js::js_trim;
use crate::tool::ToolHints;

/// The definition one MCP tool gets in the agent, as pi's MCP extension makes it.
///
/// ```
/// use pi_runtime::__conformance::tool_definitions;
/// use serde_json::json;
///
/// let tools = [json!({"name": "read-file", "inputSchema": {"properties": {"path": {"type": "string"}}}})];
/// let defs = tool_definitions("files", &tools, |_| false)?;
/// assert_eq!(defs[0].name, "mcp__files__read_file");
/// assert_eq!(defs[0].label, "files/read-file");
/// assert_eq!(defs[0].description, "MCP tool read-file from server files");
/// assert_eq!(defs[0].parameters, json!({"properties": {"path": {"type": "string"}}, "type": "object"}));
/// # Ok::<(), pi_runtime::mcp::McpError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ListedTool {
    /// The name the model calls: `mcp__<server>__<tool>`, sanitized, maybe hashed.
    pub name: String,
    /// `<server>/<tool>`, the raw names.
    pub label: String,
    /// The server's name in the configuration.
    pub server: String,
    /// The tool's own name on its server.
    pub tool: String,
    /// The description the model reads, with pi's fallbacks.
    pub description: String,
    /// The input schema, normalized and otherwise verbatim.
    pub parameters: Value,
    /// The schema of the whole `CallToolResult`, with the tool's own output schema as
    /// `structuredContent`.
    pub output_schema: Value,
    /// The boolean hints of the tool's annotations; `None` without any. They serialize as
    /// MCP writes them (`{"readOnlyHint": true}`).
    pub annotations: Option<ToolHints>,
}

/// Turn one server's `tools/list` entries (every page, in order) into agent tool definitions,
/// as pi's MCP extension does. `taken` says whether another tool (of a server registered
/// earlier) owns a name already.
///
/// # Errors
/// [`McpError::InvalidToolList`] when an entry is not an object with a string `name` and an
/// object `inputSchema`: the whole list is rejected, as pi's client does.
pub fn tool_definitions(
    server: &str,
    tools: &[Value],
    taken: impl Fn(&str) -> bool,
) -> Result<Vec<ListedTool>, McpError> {
    let mut entries = Vec::with_capacity(tools.len());
    for tool in tools {
        let name = tool.get("name").and_then(Value::as_str);
        let schema = tool.get("inputSchema").and_then(Value::as_object);
        match (tool.as_object(), name, schema) {
            (Some(tool), Some(name), Some(schema)) => entries.push((tool, name, schema)),
            _ => return Err(McpError::InvalidToolList),
        }
    }
    let names = assign_names(server, entries.iter().map(|(_, name, _)| *name), taken);
    Ok(entries
        .into_iter()
        .zip(names)
        .map(|((tool, raw, schema), name)| ListedTool {
            name,
            label: format!("{server}/{raw}"),
            server: server.to_owned(),
            tool: raw.to_owned(),
            description: description(server, raw, tool),
            parameters: Value::Object(normalize_input_schema(schema)),
            output_schema: result_schema(tool.get("outputSchema")),
            annotations: annotation_hints(tool.get("annotations")),
        })
        .collect())
}

/// `description.trim()`, else `title ?? annotations.title` when not empty, else
/// `MCP tool <tool> from server <server>`.
fn description(server: &str, tool_name: &str, tool: &Map<String, Value>) -> String {
    if let Some(Value::String(description)) = tool.get("description") {
        let trimmed = js_trim(description);
        if !trimmed.is_empty() {
            return trimmed.to_owned();
        }
    }
    let title = match tool.get("title") {
        None | Some(Value::Null) => tool.get("annotations").and_then(|a| a.get("title")),
        title => title,
    };
    match title {
        Some(Value::String(title)) if !title.is_empty() => title.clone(),
        _ => format!("MCP tool {tool_name} from server {server}"),
    }
}

/// pi-mcp's `normalizeMcpInputSchema`: keys kept in order; `type` set to `"object"` when
/// absent or null (in place when the key exists, else appended); `properties: {}` appended
/// when absent (a null stays).
pub(crate) fn normalize_input_schema(schema: &Map<String, Value>) -> Map<String, Value> {
    let mut out = schema.clone();
    match out.get_mut("type") {
        Some(kind @ Value::Null) => *kind = Value::String("object".into()),
        Some(_) => {}
        None => {
            out.insert("type".into(), Value::String("object".into()));
        }
    }
    if !out.contains_key("properties") {
        out.insert("properties".into(), Value::Object(Map::new()));
    }
    out
}

/// The boolean hints of `annotations`; `None` without any.
fn annotation_hints(annotations: Option<&Value>) -> Option<ToolHints> {
    let annotations = annotations?.as_object()?;
    let hint = |key: &str| annotations.get(key).and_then(Value::as_bool);
    let hints = ToolHints {
        read_only: hint("readOnlyHint"),
        destructive: hint("destructiveHint"),
        idempotent: hint("idempotentHint"),
        open_world: hint("openWorldHint"),
    };
    (hints != ToolHints::default()).then_some(hints)
}

/// The hints as MCP's `ToolAnnotations` writes them, in this fixed order, a `None` left out:
/// `{"readOnlyHint": true, "openWorldHint": false}`.
/// The `CallToolResult` schema pi gives every MCP tool, with the tool's own output schema
/// (its local `$ref`s relocated) as `structuredContent`, or `{}` without one.
pub(crate) fn result_schema(output_schema: Option<&Value>) -> Value {
    let structured = match output_schema {
        Some(schema @ Value::Object(_)) => relocate(schema, false),
        _ => json!({}),
    };
    json!({
        "type": "object",
        "properties": {
            "content": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "type": {"enum": ["text", "image", "audio", "resource_link", "resource"]},
                        "text": {"type": "string"},
                        "data": {"type": "string"},
                        "mimeType": {"type": "string"}
                    },
                    "required": ["type"],
                    "additionalProperties": true
                }
            },
            "structuredContent": structured,
            "isError": {"type": "boolean"}
        },
        "required": ["content"],
        "additionalProperties": true
    })
}

const PREFIX: &str = "#/properties/structuredContent";

/// Walk a schema and put [`PREFIX`] in front of every local `$ref` (`#` or `#/...`). With
/// `names`, the object's keys are names and only its values are schemas.
fn relocate(schema: &Value, names: bool) -> Value {
    match schema {
        Value::Array(items) => Value::Array(items.iter().map(|v| relocate(v, false)).collect()),
        Value::Object(map) if names => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), relocate(v, false)))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| {
                    let value = match (key.as_str(), value) {
                        ("$ref", Value::String(target))
                            if target == "#" || target.starts_with("#/") =>
                        {
                            Value::String(format!("{PREFIX}{}", &target[1..]))
                        }
                        ("const" | "enum" | "default" | "examples", _) => value.clone(),
                        (
                            "properties" | "patternProperties" | "dependentSchemas"
                            | "dependencies" | "$defs" | "definitions",
                            _,
                        ) => relocate(value, true),
                        _ => relocate(value, false),
                    };
                    (key.clone(), value)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_relocated_and_names_kept() {
        let schema = json!({
            "$defs": {"$ref": {"type": "string"}},
            "properties": {"$ref": {"$ref": "#/$defs/Node"}, "x": {"const": {"$ref": "#"}}},
            "items": [{"$ref": "#"}, {"$ref": "other.json#/a"}]
        });
        assert_eq!(
            relocate(&schema, false),
            json!({
                "$defs": {"$ref": {"type": "string"}},
                "properties": {
                    "$ref": {"$ref": "#/properties/structuredContent/$defs/Node"},
                    "x": {"const": {"$ref": "#"}}
                },
                "items": [{"$ref": "#/properties/structuredContent"}, {"$ref": "other.json#/a"}]
            })
        );
    }

    #[test]
    fn description_fallbacks() {
        let tool = |v: Value| v.as_object().cloned().unwrap_or_default();
        assert_eq!(
            description("s", "t", &tool(json!({"description": " \u{feff}d\n"}))),
            "d"
        );
        assert_eq!(
            description(
                "s",
                "t",
                &tool(json!({"title": "", "annotations": {"title": "A"}}))
            ),
            "MCP tool t from server s"
        );
        assert_eq!(
            description(
                "s",
                "t",
                &tool(json!({"title": null, "annotations": {"title": "A"}}))
            ),
            "A"
        );
    }
}
