//! Random schemas from a small generator and random values: validation never panics, and
//! whatever it accepts passes jsonschema's own check of the same schema.

use pi_runtime::args::CompiledSchema;
use proptest::prelude::*;
use serde_json::{Value, json};

fn scalar_schema() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({"type": "string"})),
        Just(json!({"type": "number"})),
        Just(json!({"type": "integer"})),
        Just(json!({"type": "boolean"})),
        Just(json!({"type": "null"})),
        Just(json!({"type": ["integer", "null"]})),
        Just(json!({"type": ["string", "number"]})),
        Just(json!({"enum": [1, "two", null, true]})),
        Just(json!({"const": 5})),
        Just(json!({"type": "number", "minimum": 0, "multipleOf": 0.5})),
        Just(json!({"type": "string", "minLength": 1, "pattern": "^[a-z]"})),
        Just(json!({"type": "string", "format": "date"})),
        Just(json!({})),
    ]
}

fn schema() -> impl Strategy<Value = Value> {
    scalar_schema().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            (
                prop::collection::vec(("[a-c]", inner.clone()), 0..4),
                any::<bool>(),
                any::<bool>()
            )
                .prop_map(|(members, closed, require_first)| {
                    let mut properties = serde_json::Map::new();
                    for (name, schema) in members {
                        properties.insert(name, schema);
                    }
                    let required: Vec<Value> = properties
                        .keys()
                        .take(usize::from(require_first))
                        .map(|k| Value::from(k.as_str()))
                        .collect();
                    json!({"type": "object", "properties": properties, "required": required,
                           "additionalProperties": !closed})
                }),
            inner
                .clone()
                .prop_map(|items| json!({"type": "array", "items": items})),
            prop::collection::vec(inner.clone(), 1..3)
                .prop_map(|branches| json!({"anyOf": branches})),
            prop::collection::vec(inner.clone(), 1..3)
                .prop_map(|branches| json!({"oneOf": branches})),
            prop::collection::vec(inner, 1..3).prop_map(|members| json!({"allOf": members})),
        ]
    })
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        (-100.0..100.0_f64).prop_map(Value::from),
        prop_oneof![
            Just("42"),
            Just(""),
            Just(" 7 "),
            Just("true"),
            Just("null"),
            Just("0x10"),
            Just("12n"),
            Just("abc"),
            Just("2024-02-29"),
            Just("1.5"),
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("[a-d]", inner), 0..4)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn accepted_values_pass_jsonschema(schema in schema(), arguments in value()) {
        let root = json!({"type": "object", "properties": {"v": schema}});
        let compiled = CompiledSchema::compile(&root).expect("generated schemas compile");
        let arguments = json!({"v": arguments});
        match compiled.validate("t", &arguments) {
            Ok(coerced) => {
                let judge = jsonschema::options().should_validate_formats(true).build(&root).unwrap();
                prop_assert!(judge.is_valid(&coerced), "accepted {coerced} for {root}");
            }
            Err(error) => {
                let prefix = "Validation failed for tool \"t\":\n  - ";
                prop_assert!(error.message().starts_with(prefix), "{}", error.message());
            }
        }
    }
}
