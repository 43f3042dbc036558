//! Constrained sampling: the strict-schema rewrite, its reasons, and the per-tool decision
//! between strict, normal and a failing request; OpenAI grammar tools.

use serde_json::{Map, Value, json};

use crate::declaration::{ConstrainedSampling, Strictness, Tool};

/// A provider's extra strict-mode restriction: `true` rejects the keyword with that value.
pub(crate) type KeywordCheck = fn(&str, &Value) -> bool;

/// Keywords no provider's strict mode accepts, checked in this order (the first one found is
/// the reason).
const UNSUPPORTED_KEYS: [&str; 16] = [
    "$ref",
    "$defs",
    "definitions",
    "allOf",
    "oneOf",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "propertyNames",
    "contains",
    "prefixItems",
    "not",
    "if",
    "then",
    "else",
];

const ROOT_NOT_OBJECT: &str = "root schema must have type object";

/// The strict copy of `schema`: every object closed with all its properties required, every
/// optional property that does not allow `null` widened to `anyOf [it, null]`.
///
/// # Errors
/// Why the schema cannot be strict, e.g. `oneOf schemas are unsupported`.
pub(crate) fn make_strict(
    schema: &Value,
    unsupported: Option<KeywordCheck>,
) -> Result<Value, String> {
    if !schema.is_object() {
        return Err(ROOT_NOT_OBJECT.into());
    }
    let mut strict = schema.clone();
    make_node_strict(&mut strict, unsupported)?;
    if strict.get("type").and_then(Value::as_str) != Some("object") {
        return Err(ROOT_NOT_OBJECT.into());
    }
    Ok(strict)
}

fn make_node_strict(schema: &mut Value, unsupported: Option<KeywordCheck>) -> Result<(), String> {
    let Value::Object(node) = schema else {
        return Err("boolean schemas are unsupported".into());
    };
    if let Some(key) = UNSUPPORTED_KEYS.iter().find(|key| node.contains_key(**key)) {
        return Err(format!("{key} schemas are unsupported"));
    }
    if let Some(check) = unsupported
        && let Some((key, value)) = node.iter().find(|(key, value)| check(key, value))
    {
        return Err(format!("{key}: {value} is unsupported"));
    }
    // A bare enum counts as typed, a bare const does not (OpenAI rejects untyped nodes).
    if !node.contains_key("type") && !node.contains_key("anyOf") && !node.contains_key("enum") {
        return Err("schemas without a type are unsupported".into());
    }
    if let Some(any_of) = node.get_mut("anyOf") {
        let variants = match any_of {
            Value::Array(variants) if !variants.is_empty() => variants,
            _ => return Err("anyOf must contain at least one schema".into()),
        };
        for variant in variants {
            if is_structured(variant) {
                return Err("object and array unions are unsupported".into());
            }
            make_node_strict(variant, unsupported)?;
        }
    }
    if let Some(items) = node.get_mut("items") {
        if items.is_array() {
            return Err("tuple schemas are unsupported".into());
        }
        make_node_strict(items, unsupported)?;
    }
    let is_object = node.get("type").and_then(Value::as_str) == Some("object");
    if node.contains_key("properties") && !is_object {
        return Err("properties require type object".into());
    }
    if !is_object {
        return Ok(());
    }
    close_object(node, unsupported)
}

/// The object rules: no open `additionalProperties`, everything required, optional properties
/// nullable.
fn close_object(
    node: &mut Map<String, Value>,
    unsupported: Option<KeywordCheck>,
) -> Result<(), String> {
    if node
        .get("additionalProperties")
        .is_some_and(|a| a != &Value::Bool(false))
    {
        return Err("schema-valued or true additionalProperties is unsupported".into());
    }
    if node.get("properties").is_some_and(|p| !p.is_object()) {
        return Err("object properties must be a schema map".into());
    }
    let required: Vec<String> = match node.get("required") {
        None => Vec::new(),
        Some(Value::Array(names)) => names
            .iter()
            .map(|name| name.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or("object required must be a string array")?,
        Some(_) => return Err("object required must be a string array".into()),
    };
    let mut properties = match node.get_mut("properties") {
        Some(Value::Object(properties)) => std::mem::take(properties),
        _ => Map::new(),
    };
    if required.iter().any(|name| !properties.contains_key(name)) {
        return Err("required contains an unknown property".into());
    }
    for (name, property) in &mut properties {
        make_node_strict(property, unsupported)?;
        if !required.contains(name) && !allows_null(property) {
            let optional = property.take();
            *property = json!({"anyOf": [optional, {"type": "null"}]});
        }
    }
    let names = properties.keys().cloned().map(Value::String).collect();
    if let Some(slot) = node.get_mut("properties") {
        *slot = Value::Object(properties);
    }
    node.insert("required".into(), Value::Array(names));
    node.insert("additionalProperties".into(), Value::Bool(false));
    Ok(())
}

/// An object or array schema (these may not be `anyOf` variants in strict mode).
fn is_structured(schema: &Value) -> bool {
    let Some(node) = schema.as_object() else {
        return false;
    };
    let structured = |t: &Value| matches!(t.as_str(), Some("object" | "array"));
    let typed = match node.get("type") {
        Some(Value::Array(types)) => types.iter().any(structured),
        Some(t) => structured(t),
        None => false,
    };
    typed || node.contains_key("properties") || node.contains_key("items")
}

fn allows_null(schema: &Value) -> bool {
    let Some(node) = schema.as_object() else {
        return false;
    };
    let null_type = match node.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
        _ => false,
    };
    null_type
        || node.get("const") == Some(&Value::Null)
        || node
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|values| values.contains(&Value::Null))
        || node
            .get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|variants| variants.iter().any(allows_null))
}

/// Decide how a tool is sent: `Some(strict schema)` when strict, `None` when sent normally.
/// `prefer` falls back to normal when the provider or the schema does not allow strict;
/// `require` fails instead.
///
/// # Errors
/// A `require` tool that cannot be strict:
/// `Tool "<name>" requires JSON-schema constrained sampling, but <reason>.`
pub(crate) fn resolve_json_schema(
    tool: &Tool,
    supports_strict: bool,
    unsupported: Option<KeywordCheck>,
) -> Result<Option<Value>, String> {
    let Some(ConstrainedSampling::JsonSchema { strict }) = &tool.constrained_sampling else {
        return Ok(None);
    };
    let reason = if supports_strict {
        match make_strict(&tool.parameters, unsupported) {
            Ok(schema) => return Ok(Some(schema)),
            Err(reason) => reason,
        }
    } else {
        "strict tools are unsupported".to_owned()
    };
    match strict {
        Strictness::Prefer => Ok(None),
        Strictness::Require => Err(format!(
            "Tool \"{}\" requires JSON-schema constrained sampling, but {reason}.",
            tool.name
        )),
    }
}

/// An OpenAI grammar ("custom") tool as it is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Grammar<'a> {
    /// `lark` or `regex`.
    pub(crate) syntax: &'static str,
    /// The grammar text.
    pub(crate) definition: &'a str,
    /// The one required string property that receives the model's input.
    pub(crate) input_property: &'a str,
}

/// The grammar a tool is sent with, when the provider supports grammar tools and the tool
/// asks for one (Lark preferred over a regular expression).
///
/// # Errors
/// `Tool "<name>" cannot use grammar constrained sampling: <reason>.`
pub(crate) fn resolve_grammar(tool: &Tool, supported: bool) -> Result<Option<Grammar<'_>>, String> {
    let Some(ConstrainedSampling::Grammar { variants }) = &tool.constrained_sampling else {
        return Ok(None);
    };
    if !supported {
        return Ok(None);
    }
    let fail = |reason: &str| {
        format!(
            "Tool \"{}\" cannot use grammar constrained sampling: {reason}.",
            tool.name
        )
    };
    let (syntax, definition) = match (
        present(variants.openai_lark.as_ref()),
        present(variants.openai_regex.as_ref()),
    ) {
        (Some(lark), _) => ("lark", lark),
        (None, Some(regex)) => ("regex", regex),
        (None, None) => return Err(fail("no supported grammar variant was provided")),
    };
    let input_property =
        grammar_input_property(&tool.parameters).map_err(|reason| fail(&reason))?;
    Ok(Some(Grammar {
        syntax,
        definition,
        input_property,
    }))
}

/// A grammar variant that is given and not blank.
fn present(text: Option<&String>) -> Option<&str> {
    text.map(String::as_str).filter(|t| !t.trim().is_empty())
}

fn grammar_input_property(schema: &Value) -> Result<&str, String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("grammar constrained sampling requires an object parameter schema".into());
    }
    let property = match schema
        .get("required")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
    {
        Some([Value::String(property)]) => property.as_str(),
        _ => {
            return Err(
                "grammar constrained sampling requires exactly one required string property".into(),
            );
        }
    };
    let Some(entry) = schema.get("properties").and_then(|p| p.get(property)) else {
        return Err(format!(
            "grammar constrained sampling requires a properties entry for {property}"
        ));
    };
    if entry.get("type").and_then(Value::as_str) != Some("string") {
        return Err(format!(
            "grammar constrained sampling property {property} must have type string"
        ));
    }
    Ok(property)
}

/// The input text of a replayed grammar call.
///
/// # Errors
/// `Grammar tool call "<name>" requires argument "<prop>" to be a string.`
pub(crate) fn grammar_input<'a>(
    tool_name: &str,
    arguments: &'a Value,
    property: &str,
) -> Result<&'a str, String> {
    arguments
        .get(property)
        .and_then(Value::as_str)
        .ok_or_else(|| {
            format!(
                "Grammar tool call \"{tool_name}\" requires argument \"{property}\" to be a string."
            )
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::declaration::GrammarVariants;

    fn reason(schema: Value) -> String {
        make_strict(&schema, None).unwrap_err()
    }

    #[test]
    fn closes_objects_and_widens_optional_properties() {
        let schema = json!({"type":"object","properties":{
            "summary":{"type":"string"},
            "risk":{"type":"string","enum":["low","high"]},
            "notes":{"type":"array","items":{"type":"string"}}},
            "required":["summary","risk"]});
        let strict = make_strict(&schema, None).unwrap();
        assert_eq!(
            serde_json::to_string(&strict).unwrap(),
            r#"{"type":"object","properties":{"summary":{"type":"string"},"risk":{"type":"string","enum":["low","high"]},"notes":{"anyOf":[{"type":"array","items":{"type":"string"}},{"type":"null"}]}},"required":["summary","risk","notes"],"additionalProperties":false}"#
        );
    }

    #[test]
    fn nullable_optional_properties_stay_and_nested_objects_close() {
        let schema = json!({"type":"object","additionalProperties":false,"properties":{
            "o":{"type":"object","properties":{"x":{"type":["number","null"]}}}},"required":["o"]});
        let strict = make_strict(&schema, None).unwrap();
        assert_eq!(
            serde_json::to_string(&strict).unwrap(),
            r#"{"type":"object","additionalProperties":false,"properties":{"o":{"type":"object","properties":{"x":{"type":["number","null"]}},"required":["x"],"additionalProperties":false}},"required":["o"]}"#
        );
    }

    #[test]
    fn reasons_in_spec_order() {
        let cases = [
            (
                json!({"type":"object","properties":{"v":true}}),
                "boolean schemas are unsupported",
            ),
            (
                json!({"type":"object","$defs":{},"oneOf":[]}),
                "$defs schemas are unsupported",
            ),
            (
                json!({"type":"object","properties":{"v":{"oneOf":[{"type":"string"}]}}}),
                "oneOf schemas are unsupported",
            ),
            (
                json!({"type":"object","properties":{"v":{"const":"x"}}}),
                "schemas without a type are unsupported",
            ),
            (
                json!({"type":"object","properties":{"v":{"anyOf":[]}}}),
                "anyOf must contain at least one schema",
            ),
            (
                json!({"type":"object","properties":{"v":{"anyOf":[{"type":"object"}]}}}),
                "object and array unions are unsupported",
            ),
            (
                json!({"type":"object","properties":{"v":{"type":"array","items":[{"type":"string"}]}}}),
                "tuple schemas are unsupported",
            ),
            (
                json!({"type":"string","properties":{}}),
                "properties require type object",
            ),
            (
                json!({"type":"object","additionalProperties":true}),
                "schema-valued or true additionalProperties is unsupported",
            ),
            (
                json!({"type":"object","properties":[]}),
                "object properties must be a schema map",
            ),
            (
                json!({"type":"object","required":[1]}),
                "object required must be a string array",
            ),
            (
                json!({"type":"object","properties":{},"required":["x"]}),
                "required contains an unknown property",
            ),
            (
                json!({"type":"string"}),
                "root schema must have type object",
            ),
            (json!(true), "root schema must have type object"),
        ];
        for (schema, expected) in cases {
            assert_eq!(reason(schema.clone()), expected, "{schema}");
        }
    }

    #[test]
    fn provider_keywords_are_reported_with_their_value() {
        fn no_minimum(key: &str, _: &Value) -> bool {
            key == "minimum"
        }
        let schema = json!({"type":"object","properties":{"n":{"type":"integer","minimum":1.5}}});
        assert_eq!(
            make_strict(&schema, Some(no_minimum)).unwrap_err(),
            "minimum: 1.5 is unsupported"
        );
    }

    fn tool(strict: Strictness) -> Tool {
        Tool::new(
            "pick",
            "Pick",
            json!({"type":"object","properties":{"v":{"oneOf":[{"type":"string"}]}}}),
        )
        .with_constrained_sampling(ConstrainedSampling::JsonSchema { strict })
    }

    #[test]
    fn decision_table() {
        assert_eq!(
            resolve_json_schema(&tool(Strictness::Prefer), true, None),
            Ok(None)
        );
        assert_eq!(
            resolve_json_schema(&tool(Strictness::Prefer), false, None),
            Ok(None)
        );
        assert_eq!(
            resolve_json_schema(&tool(Strictness::Require), true, None),
            Err("Tool \"pick\" requires JSON-schema constrained sampling, but oneOf schemas are unsupported.".into())
        );
        assert_eq!(
            resolve_json_schema(&tool(Strictness::Require), false, None),
            Err("Tool \"pick\" requires JSON-schema constrained sampling, but strict tools are unsupported.".into())
        );
        let plain = Tool::new("t", "", json!({"type":"object"}));
        assert_eq!(resolve_json_schema(&plain, true, None), Ok(None));
        let ok = plain.with_constrained_sampling(ConstrainedSampling::JsonSchema {
            strict: Strictness::Require,
        });
        assert_eq!(
            resolve_json_schema(&ok, true, None),
            Ok(Some(
                json!({"type":"object","required":[],"additionalProperties":false})
            ))
        );
    }

    #[test]
    fn grammar_tools() {
        let variants = GrammarVariants {
            openai_lark: Some(" ".into()),
            openai_regex: Some("[a-z]+".into()),
        };
        let g = Tool::new(
            "g",
            "",
            json!({"type":"object","properties":{"input":{"type":"string"}},"required":["input"]}),
        )
        .with_constrained_sampling(ConstrainedSampling::Grammar { variants });
        assert_eq!(resolve_grammar(&g, false), Ok(None));
        assert_eq!(
            resolve_grammar(&g, true),
            Ok(Some(Grammar {
                syntax: "regex",
                definition: "[a-z]+",
                input_property: "input"
            }))
        );
        let mut bad = g.clone();
        bad.parameters = std::sync::Arc::new(json!({"type":"object","properties":{}}));
        assert_eq!(
            resolve_grammar(&bad, true),
            Err("Tool \"g\" cannot use grammar constrained sampling: grammar constrained sampling requires exactly one required string property.".into())
        );
        assert_eq!(
            grammar_input("g", &json!({"input": 1}), "input"),
            Err("Grammar tool call \"g\" requires argument \"input\" to be a string.".into())
        );
    }
}
