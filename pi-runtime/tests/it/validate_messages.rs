//! Every message of SPEC §4.5 with its path, the verified orderings of §4.6, the union
//! reports of §4.7, and the frame of the §4.2 text.

use crate::validate_support;

use pi_runtime::agent::validate_tool_call;
use pi_runtime::args::{CompiledSchema, deserialize_arguments};
use pi_runtime::{Tool, ToolCall};
use serde_json::{Value, json};
use validate_support::{run, run_v};

fn fails(schema: Value, input: Value) -> Vec<String> {
    run_v(&schema, &input).expect_err("the value must be rejected")
}

#[test]
fn scalar_keyword_messages() {
    let cases = [
        (
            json!({"type": ["number", "boolean"]}),
            json!("x"),
            "v: expected number or boolean, got string",
        ),
        (
            json!({"type": "integer", "enum": [1, 2]}),
            json!(1.5),
            "v: expected integer, got number",
        ),
        (
            json!({"type": "bigint"}),
            json!("x"),
            "v: expected bigint, got string",
        ),
        (
            json!({"minLength": 3}),
            json!("ab"),
            "v: expected at least 3 characters",
        ),
        (
            json!({"maxLength": 2}),
            json!("😀😀😀"),
            "v: expected at most 2 characters",
        ),
        (
            json!({"pattern": "^a(?=b)"}),
            json!("ac"),
            "v: expected to match ^a(?=b)",
        ),
        (
            json!({"format": "email"}),
            json!("nope"),
            "v: expected format email",
        ),
        (
            json!({"format": "date"}),
            json!("2023-02-29"),
            "v: expected format date",
        ),
        (json!({"minimum": 1.5}), json!(1), "v: expected >= 1.5"),
        (json!({"maximum": 10}), json!(11), "v: expected <= 10"),
        (json!({"exclusiveMinimum": 0}), json!(0), "v: expected > 0"),
        (json!({"exclusiveMaximum": 0}), json!(0), "v: expected < 0"),
        (
            json!({"multipleOf": 5}),
            json!(12),
            "v: expected a multiple of 5",
        ),
        (
            json!({"not": {"type": "string"}}),
            json!("x"),
            "v: must not match the schema in not",
        ),
        (json!({"const": [1]}), json!([2]), "v: expected [1]"),
    ];
    for (schema, input, message) in cases {
        assert_eq!(
            fails(schema.clone(), input.clone()),
            vec![message.to_owned()],
            "{schema} {input}"
        );
    }
}

#[test]
fn multiple_of_is_exact_for_decimals() {
    assert_eq!(
        run_v(&json!({"multipleOf": 0.0001}), &json!(0.0075)),
        Ok(json!(0.0075))
    );
}

#[test]
fn unknown_formats_pass() {
    assert_eq!(
        run_v(&json!({"format": "made-up"}), &json!("x")),
        Ok(json!("x"))
    );
}

#[test]
fn long_enums_are_cut_after_twenty() {
    let members: Vec<String> = (0..25).map(|i| format!("v{i}")).collect();
    let shown: Vec<String> = members[..20].iter().map(|m| format!("\"{m}\"")).collect();
    assert_eq!(
        fails(json!({"enum": members}), json!("x")),
        vec![format!(
            "v: expected one of [{}, ... and 5 more]",
            shown.join(",")
        )]
    );
}

#[test]
fn object_keyword_messages() {
    let schema = json!({
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "propertyNames": {"maxLength": 3},
        "dependentRequired": {"a": ["b"]},
        "maxProperties": 1
    });
    assert_eq!(
        run(&schema, &json!({"a": "x", "long": 1})),
        Err(vec![
            "long: invalid property name".into(),
            "root: expected at most 1 properties".into(),
            "b: required when a is present".into(),
        ])
    );
    let closed = json!({"type": "object", "properties": {}, "unevaluatedProperties": false});
    assert_eq!(
        run(&closed, &json!({"x": 1})),
        Err(vec!["x: unknown field".into()])
    );
    let draft7 =
        json!({"$schema": "http://json-schema.org/draft-07/schema#", "dependencies": {"a": ["c"]}});
    assert_eq!(
        run(&draft7, &json!({"a": 1})),
        Err(vec!["c: required when a is present".into()])
    );
}

#[test]
fn array_keyword_messages() {
    let cases = [
        (
            json!({"minItems": 2}),
            json!([1]),
            "v: expected at least 2 items",
        ),
        (
            json!({"maxItems": 1}),
            json!([1, 2]),
            "v: expected at most 1 items",
        ),
        (
            json!({"uniqueItems": true}),
            json!([1, 1.0]),
            "v: expected unique items",
        ),
        (
            json!({"contains": {"type": "string"}}),
            json!([1]),
            "v: expected at least 1 matching item",
        ),
        (
            json!({"contains": {"type": "string"}, "minContains": 2}),
            json!(["a"]),
            "v: expected at least 2 matching items",
        ),
        (
            json!({"contains": {"type": "string"}, "minContains": 0, "maxContains": 1}),
            json!(["a", "b"]),
            "v: expected at most 1 matching item",
        ),
        (
            json!({"contains": {"type": "string"}, "minContains": 2, "maxContains": 3}),
            json!(["a"]),
            "v: expected between 2 and 3 matching items",
        ),
        (
            json!({"prefixItems": [{}], "items": false}),
            json!([1, 2]),
            "v.1: no value is allowed here",
        ),
        (
            json!({"prefixItems": [{}], "unevaluatedItems": false}),
            json!([1, 2]),
            "v.1: unexpected item",
        ),
        (json!(false), json!(1), "v: no value is allowed here"),
    ];
    for (schema, input, message) in cases {
        assert_eq!(
            fails(schema.clone(), input.clone()),
            vec![message.to_owned()],
            "{schema} {input}"
        );
    }
}

#[test]
fn dangling_ref_rejects_only_its_place() {
    let schema = json!({"type": "object", "properties": {
        "a": {"$ref": "#/$defs/Missing"},
        "b": {"type": "number"}
    }});
    assert_eq!(run(&schema, &json!({"b": "2"})), Ok(json!({"b": 2})));
    assert_eq!(
        run(&schema, &json!({"a": 1, "b": "x"})),
        Err(vec![
            "a: unresolved reference #/$defs/Missing".into(),
            "b: expected number, got string".into()
        ])
    );
}

#[test]
fn verified_order_required_then_properties_then_extra_keys() {
    let schema = json!({
        "type": "object",
        "properties": {"c": {"type": "object"}},
        "required": ["b", "a", "z"],
        "additionalProperties": false
    });
    assert_eq!(
        run(&schema, &json!({"c": "x", "extra": 1, "c2": 2})),
        Err(vec![
            "b: missing".into(),
            "a: missing".into(),
            "z: missing".into(),
            "c: expected object, got string".into(),
            "extra: unknown field".into(),
            "c2: unknown field".into(),
        ])
    );
}

#[test]
fn verified_order_with_nested_and_counts() {
    let schema = json!({
        "type": "object",
        "properties": {
            "a": {"type": "number"},
            "b": {"type": "object", "properties": {"c": {}}, "required": ["c"]},
            "d": {}
        },
        "required": ["a", "b", "d"],
        "additionalProperties": false,
        "minProperties": 5
    });
    assert_eq!(
        run(&schema, &json!({"b": {}, "e": 1, "a": "x"})),
        Err(vec![
            "d: missing".into(),
            "a: expected number, got string".into(),
            "b.c: missing".into(),
            "e: unknown field".into(),
            "root: expected at least 5 properties".into(),
        ])
    );
}

#[test]
fn a_type_mismatch_stops_the_value() {
    assert_eq!(
        fails(
            json!({"type": "string", "minLength": 5, "enum": ["abcdef"]}),
            json!(3)
        ),
        vec!["v: expected string, got number".to_owned()]
    );
}

#[test]
fn tagged_unions_report_the_selected_branch() {
    let schema = json!({"anyOf": [
        {"type": "object", "properties": {"kind": {"const": "text"}, "text": {"type": "string"}}, "required": ["kind", "text"]},
        {"type": "object", "properties": {"kind": {"const": "image"}, "width": {"type": "number", "minimum": 0}}, "required": ["kind"]}
    ]});
    assert_eq!(
        fails(schema.clone(), json!({"kind": "video"})),
        vec![r#"v.kind: expected one of ["text","image"]"#.to_owned()]
    );
    assert_eq!(
        fails(schema.clone(), json!({"kind": "image", "width": -1})),
        vec!["v.width: expected >= 0".to_owned()]
    );
    assert_eq!(
        fails(schema, json!({"kind": "text"})),
        vec!["v.text: missing".to_owned()]
    );
}

#[test]
fn untagged_unions_report_the_best_branch() {
    assert_eq!(
        fails(
            json!({"anyOf": [{"type": "number"}, {"type": "boolean"}]}),
            json!("x")
        ),
        vec!["v: expected number, got string".to_owned()]
    );
    let schema = json!({"anyOf": [
        {"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]},
        {"type": "object", "properties": {"b": {"type": "string"}, "c": {"type": "string"}}, "required": ["b", "c"]}
    ]});
    // The second branch declares more of the value's keys.
    assert_eq!(
        fails(schema, json!({"b": "x", "c": 5})),
        vec!["v.c: expected string, got number".to_owned()]
    );
    let deeper = json!({"anyOf": [
        {"type": "object", "required": ["x"]},
        {"type": "object", "properties": {"o": {"type": "object", "required": ["deep"]}}}
    ]});
    assert_eq!(
        fails(deeper, json!({"o": {}})),
        vec!["v.o.deep: missing".to_owned()]
    );
}

#[test]
fn the_text_frame() {
    let schema =
        CompiledSchema::compile(&json!({"type": "object", "properties": {"": {"type": "number"}}}))
            .unwrap();
    let error = schema
        .validate("my \"tool\"", &json!({"": "x"}))
        .unwrap_err();
    assert_eq!(
        error.message(),
        "Validation failed for tool \"my \"tool\"\":\n  - : expected number, got string\n\nReceived arguments:\n{\n  \"\": \"x\"\n}"
    );
    let root = CompiledSchema::compile(&json!({"type": "object"})).unwrap();
    assert_eq!(
        root.validate("t", &json!("str")).unwrap_err().message(),
        "Validation failed for tool \"t\":\n  - root: expected object, got string\n\nReceived arguments:\n\"str\""
    );
}

#[test]
fn arguments_error_wins() {
    let tool = Tool::new("add", "", json!({"type": "object"}));
    let mut call = ToolCall::new("c1", "add", json!({}));
    call.arguments_error = Some("Unexpected end of JSON input".into());
    assert_eq!(
        validate_tool_call(&tool, &call).unwrap_err().message(),
        "Invalid arguments for tool \"add\": Unexpected end of JSON input"
    );
}

#[test]
fn unusable_schemas_are_rejected_at_compile_time() {
    assert_eq!(
        CompiledSchema::compile(&json!(true))
            .unwrap_err()
            .to_string(),
        "the parameter schema must be a JSON object"
    );
    assert!(CompiledSchema::compile(&json!({"pattern": "(unclosed"})).is_err());
    assert!(CompiledSchema::compile(&json!({"patternProperties": {"[": {}}})).is_err());
    assert!(CompiledSchema::compile(&json!({"type": 5})).is_err());
}

#[test]
fn deserialize_errors_name_the_place() {
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code, reason = "only the error matters")]
    struct Edit {
        #[serde(rename = "oldText")]
        old_text: String,
    }
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code, reason = "only the error matters")]
    struct Args {
        edits: Vec<Edit>,
    }
    let arguments = json!({"edits": [{"oldText": "a"}, {"oldText": 5}]});
    let error = deserialize_arguments::<Args>("edit", arguments).unwrap_err();
    assert_eq!(
        error.message(),
        "Validation failed for tool \"edit\":\n  - edits.1.oldText: invalid type: integer `5`, expected a string\n\nReceived arguments:\n{\n  \"edits\": [\n    {\n      \"oldText\": \"a\"\n    },\n    {\n      \"oldText\": 5\n    }\n  ]\n}"
    );
    let error = deserialize_arguments::<Args>("edit", json!({})).unwrap_err();
    assert!(
        error
            .message()
            .starts_with("Validation failed for tool \"edit\":\n  - root: missing field `edits`\n")
    );
}
