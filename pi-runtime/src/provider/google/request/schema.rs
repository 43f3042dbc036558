//! The one rewrite Gemini's `parametersJsonSchema` needs: Gemini ignores `const` but honours
//! `enum`, so a string or number `const` becomes a one-value `enum`.

use serde_json::{Map, Value};

/// Keywords whose value maps names to subschemas (their keys are names, not keywords).
const NAME_MAPS: [&str; 6] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];

/// Keywords holding a subschema or a list of subschemas rather than literal data.
const SUBSCHEMAS: [&str; 16] = [
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "items",
    "prefixItems",
    "additionalItems",
    "unevaluatedItems",
    "contains",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
];

/// A copy of `schema` with `{"const": v}` (string or number, no `enum`) as `{"enum": [v]}`,
/// through every subschema. Literal data (`default`, `examples`, `enum`) is left alone, and
/// property names are never touched.
pub(super) fn const_to_enum(schema: &Value) -> Value {
    rewrite(schema, false)
}

fn rewrite(value: &Value, is_name_map: bool) -> Value {
    match value {
        Value::Array(items) => {
            Value::Array(items.iter().map(|item| rewrite(item, false)).collect())
        }
        Value::Object(node) => Value::Object(rewrite_object(node, is_name_map)),
        other => other.clone(),
    }
}

fn rewrite_object(node: &Map<String, Value>, is_name_map: bool) -> Map<String, Value> {
    let mut out: Map<String, Value> = node
        .iter()
        .map(|(key, value)| {
            let value = if is_name_map || SUBSCHEMAS.contains(&key.as_str()) {
                rewrite(value, false)
            } else if NAME_MAPS.contains(&key.as_str()) {
                rewrite(value, true)
            } else {
                value.clone()
            };
            (key.clone(), value)
        })
        .collect();
    if !is_name_map
        && !out.contains_key("enum")
        && out
            .get("const")
            .is_some_and(|c| c.is_string() || c.is_number())
        && let Some(constant) = out.shift_remove("const")
    {
        out.insert("enum".into(), Value::Array(vec![constant]));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn const_becomes_enum_in_subschemas_only() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "kind": {"const": "file", "description": "d"},
                "const": {"type": "boolean", "const": true},
                "n": {"anyOf": [{"const": 1}, {"const": null}]}
            },
            "default": {"const": "x"}
        });
        assert_eq!(
            serde_json::to_string(&const_to_enum(&schema)).unwrap(),
            r#"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"kind":{"description":"d","enum":["file"]},"const":{"type":"boolean","const":true},"n":{"anyOf":[{"enum":[1]},{"const":null}]}},"default":{"const":"x"}}"#
        );
    }
}
