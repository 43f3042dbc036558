//! One test per row of the coercion tables of SPEC §4.4, with the seed rules of §4.8 applied
//! (D1: numbers and booleans never become strings; D2: `got number` for every number).

use crate::validate_support;

use serde_json::{Value, json};
use validate_support::{run, run_v};

/// What a table cell says.
enum Cell {
    /// `=`: unchanged.
    Same,
    /// Converted to this value.
    To(Value),
    /// `✗`: `v: expected <type>, got <got>`.
    Fails,
}
use Cell::{Fails, Same, To};

fn got(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Check one row of §4.4.1 against the five scalar targets.
fn scalar_row(input: Value, cells: [Cell; 5]) {
    let targets = ["string", "number", "integer", "boolean", "null"];
    for (target, cell) in targets.into_iter().zip(cells) {
        let outcome = run_v(&json!({"type": target}), &input);
        let expected = match cell {
            Same => Ok(input.clone()),
            To(value) => Ok(value),
            Fails => Err(vec![format!("v: expected {target}, got {}", got(&input))]),
        };
        assert_eq!(outcome, expected, "{input} for type {target}");
    }
}

#[test]
fn numeric_strings() {
    scalar_row(
        json!("42"),
        [Same, To(json!(42)), To(json!(42)), Fails, Fails],
    );
    scalar_row(
        json!("42.5"),
        [Same, To(json!(42.5)), To(json!(42)), Fails, Fails],
    );
    scalar_row(
        json!(""),
        [Same, To(json!(0)), To(json!(0)), Fails, To(json!(null))],
    );
    scalar_row(
        json!(" 7 "),
        [Same, To(json!(7)), To(json!(7)), Fails, Fails],
    );
    scalar_row(
        json!("1e3"),
        [Same, To(json!(1000)), To(json!(1000)), Fails, Fails],
    );
    scalar_row(
        json!("0x10"),
        [Same, To(json!(16)), To(json!(16)), Fails, Fails],
    );
    scalar_row(
        json!("12n"),
        [Same, To(json!(12)), To(json!(12)), Fails, Fails],
    );
    scalar_row(
        json!("12.9"),
        [Same, To(json!(12.9)), To(json!(12)), Fails, Fails],
    );
}

#[test]
fn strings_no_number_reads() {
    for input in ["abc", "Infinity", "-0x10", "1_000", " true"] {
        scalar_row(json!(input), [Same, Fails, Fails, Fails, Fails]);
    }
}

#[test]
fn boolean_words() {
    for input in ["true", "TRUE", "True"] {
        scalar_row(
            json!(input),
            [Same, To(json!(1)), To(json!(1)), To(json!(true)), Fails],
        );
    }
    for input in ["false", "fAlSe"] {
        scalar_row(
            json!(input),
            [Same, To(json!(0)), To(json!(0)), To(json!(false)), Fails],
        );
    }
}

#[test]
fn one_and_zero_strings() {
    scalar_row(
        json!("1"),
        [Same, To(json!(1)), To(json!(1)), To(json!(true)), Fails],
    );
    scalar_row(
        json!("0"),
        [
            Same,
            To(json!(0)),
            To(json!(0)),
            To(json!(false)),
            To(json!(null)),
        ],
    );
}

#[test]
fn null_words() {
    for input in ["null", "NULL", "undefined"] {
        scalar_row(json!(input), [Same, Fails, Fails, Fails, To(json!(null))]);
    }
}

#[test]
fn numbers_never_become_text() {
    scalar_row(json!(42), [Fails, Same, Same, Fails, Fails]);
    scalar_row(json!(42.5), [Fails, Same, To(json!(42)), Fails, Fails]);
    scalar_row(
        json!(0),
        [Fails, Same, Same, To(json!(false)), To(json!(null))],
    );
    scalar_row(json!(1), [Fails, Same, Same, To(json!(true)), Fails]);
    scalar_row(json!(2), [Fails, Same, Same, Fails, Fails]);
    scalar_row(json!(1e21), [Fails, Same, Same, Fails, Fails]);
    scalar_row(json!(1e-7), [Fails, Same, To(json!(0)), Fails, Fails]);
}

#[test]
fn booleans_never_become_text() {
    scalar_row(
        json!(true),
        [Fails, To(json!(1)), To(json!(1)), Same, Fails],
    );
    scalar_row(
        json!(false),
        [Fails, To(json!(0)), To(json!(0)), Same, To(json!(null))],
    );
}

#[test]
fn required_null() {
    scalar_row(
        json!(null),
        [
            To(json!("null")),
            To(json!(0)),
            To(json!(0)),
            To(json!(false)),
            Same,
        ],
    );
}

#[test]
fn containers_never_become_scalars() {
    for input in [json!([]), json!(["x"]), json!({})] {
        scalar_row(input, [Fails, Fails, Fails, Fails, Fails]);
    }
}

#[test]
fn optional_null_is_removed_unless_the_schema_takes_null() {
    for target in ["string", "number", "integer", "boolean"] {
        let schema = json!({"type": "object", "properties": {"v": {"type": target}}});
        assert_eq!(run(&schema, &json!({"v": null})), Ok(json!({})), "{target}");
    }
    let schema = json!({"type": "object", "properties": {"v": {"type": "null"}}});
    assert_eq!(run(&schema, &json!({"v": null})), Ok(json!({"v": null})));
    for kept in [
        json!({}),
        json!(true),
        json!({"type": ["string", "null"]}),
        json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
        json!({"enum": [null, "x"]}),
    ] {
        let schema = json!({"type": "object", "properties": {"v": kept}});
        assert_eq!(
            run(&schema, &json!({"v": null})),
            Ok(json!({"v": null})),
            "{kept}"
        );
    }
}

// §4.4.2

#[test]
fn single_values_become_arrays() {
    let strings = json!({"type": "array", "items": {"type": "string"}});
    let numbers = json!({"type": "array", "items": {"type": "number"}});
    assert_eq!(run_v(&strings, &json!("42")), Ok(json!(["42"])));
    assert_eq!(run_v(&numbers, &json!("42")), Ok(json!([42])));
    assert_eq!(run_v(&strings, &json!("abc")), Ok(json!(["abc"])));
    assert_eq!(
        run_v(&numbers, &json!("abc")),
        Err(vec!["v.0: expected number, got string".into()])
    );
    assert_eq!(
        run_v(&strings, &json!(42)),
        Err(vec!["v.0: expected string, got number".into()])
    );
    assert_eq!(run_v(&numbers, &json!(42)), Ok(json!([42])));
    assert_eq!(
        run_v(&strings, &json!(true)),
        Err(vec!["v.0: expected string, got boolean".into()])
    );
    assert_eq!(run_v(&numbers, &json!(true)), Ok(json!([1])));
    assert_eq!(run_v(&strings, &json!(null)), Ok(json!(["null"])));
    assert_eq!(run_v(&numbers, &json!(null)), Ok(json!([0])));
    assert_eq!(
        run_v(&strings, &json!([1, "2"])),
        Err(vec!["v.0: expected string, got number".into()])
    );
    assert_eq!(run_v(&numbers, &json!([1, "2"])), Ok(json!([1, 2])));
    assert_eq!(
        run_v(&strings, &json!({})),
        Err(vec!["v.0: expected string, got object".into()])
    );
    assert_eq!(
        run_v(&numbers, &json!({})),
        Err(vec!["v.0: expected number, got object".into()])
    );
}

#[test]
fn objects_are_not_built_from_scalars() {
    let object = json!({"type": "object"});
    for input in [
        json!("42"),
        json!("abc"),
        json!(42),
        json!(true),
        json!(null),
        json!([1, "2"]),
    ] {
        assert_eq!(
            run_v(&object, &input),
            Err(vec![format!("v: expected object, got {}", got(&input))]),
            "{input}"
        );
    }
    assert_eq!(run_v(&object, &json!({})), Ok(json!({})));
    let schema = json!({"type": "object", "properties": {"v": {"type": "object"}}});
    assert_eq!(run(&schema, &json!({"v": null})), Ok(json!({})));
}

#[test]
fn a_single_edit_is_wrapped() {
    let edit = json!({"type": "object", "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}}});
    let schema = json!({"type": "array", "items": edit});
    let one = json!({"oldText": "a", "newText": "b"});
    assert_eq!(run_v(&schema, &one), Ok(json!([one])));
}

#[test]
fn json_text_is_never_parsed() {
    let strings = json!({"type": "array", "items": {"type": "string"}});
    assert_eq!(
        run_v(&strings, &json!("[\"a\",\"b\"]")),
        Ok(json!(["[\"a\",\"b\"]"]))
    );
    assert_eq!(
        run_v(&json!({"type": "object"}), &json!("{\"a\":1}")),
        Err(vec!["v: expected object, got string".into()])
    );
}

#[test]
fn nested_arrays_wrap_twice() {
    let schema = json!({"type": "array", "items": {"type": "array", "items": {"type": "number"}}});
    assert_eq!(run_v(&schema, &json!("5")), Ok(json!([[5]])));
}

#[test]
fn tuples_never_wrap() {
    let tuple = json!({"type": "array", "prefixItems": [{"type": "number"}]});
    assert_eq!(
        run_v(&tuple, &json!("5")),
        Err(vec!["v: expected array, got string".into()])
    );
    let with_rest = json!({"prefixItems": [{"type": "number"}, {"type": "boolean"}], "items": {"type": "string"}});
    assert_eq!(
        run_v(&with_rest, &json!(["5", "true", 7, 8])),
        Err(vec![
            "v.2: expected string, got number".into(),
            "v.3: expected string, got number".into()
        ])
    );
    assert_eq!(
        run_v(&with_rest, &json!(["5", "true", "7"])),
        Ok(json!([5, true, "7"]))
    );
}

#[test]
fn draft7_additional_items_are_validated_not_coerced() {
    let schema = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"v": {"items": [{"type": "number"}], "additionalItems": {"type": "number"}}}
    });
    assert_eq!(
        run(&schema, &json!({"v": ["1", "2"]})),
        Err(vec!["v.1: expected number, got string".into()])
    );
}

// §4.4.3

#[test]
fn type_arrays() {
    let t = |types: Value| json!({"type": types});
    let integer_null = t(json!(["integer", "null"]));
    assert_eq!(run_v(&integer_null, &json!("")), Ok(json!(null)));
    assert_eq!(run_v(&integer_null, &json!("5")), Ok(json!(5)));
    assert_eq!(
        run_v(&integer_null, &json!("5.5")),
        Err(vec!["v: expected integer or null, got string".into()])
    );
    assert_eq!(run_v(&integer_null, &json!(false)), Ok(json!(0)));
    assert_eq!(run_v(&integer_null, &json!(true)), Ok(json!(1)));
    assert!(run_v(&integer_null, &json!("null")).is_err());

    let number_string = t(json!(["number", "string"]));
    assert_eq!(run_v(&number_string, &json!("1")), Ok(json!("1")));
    assert_eq!(run_v(&number_string, &json!(true)), Ok(json!(1)));
    assert_eq!(run_v(&number_string, &json!(null)), Ok(json!(0)));

    let string_number = t(json!(["string", "number"]));
    assert_eq!(run_v(&string_number, &json!("1")), Ok(json!("1")));
    assert_eq!(run_v(&string_number, &json!(true)), Ok(json!(1)));
    assert_eq!(run_v(&string_number, &json!(null)), Ok(json!("")));

    let boolean_number = t(json!(["boolean", "number"]));
    assert_eq!(run_v(&boolean_number, &json!("1")), Ok(json!(1)));
    assert_eq!(run_v(&boolean_number, &json!("true")), Ok(json!(true)));
    assert_eq!(run_v(&boolean_number, &json!("0")), Ok(json!(0)));
    assert_eq!(run_v(&boolean_number, &json!(null)), Ok(json!(false)));
    assert_eq!(
        run_v(&boolean_number, &json!("x")),
        Err(vec!["v: expected boolean or number, got string".into()])
    );

    let string_null = t(json!(["string", "null"]));
    assert_eq!(run_v(&string_null, &json!(null)), Ok(json!(null)));
    assert_eq!(
        run_v(&string_null, &json!(1)),
        Err(vec!["v: expected string or null, got number".into()])
    );

    let array_null = json!({"type": ["array", "null"], "items": {"type": "string"}});
    assert_eq!(run_v(&array_null, &json!(null)), Ok(json!(null)));
    assert_eq!(
        run_v(&array_null, &json!("x")),
        Err(vec!["v: expected array or null, got string".into()])
    );
    assert_eq!(
        run_v(&array_null, &json!(["a", 1])),
        Err(vec!["v.1: expected string, got number".into()])
    );

    let object_string = t(json!(["object", "string"]));
    assert!(run_v(&object_string, &json!(1)).is_err());
    assert_eq!(run_v(&object_string, &json!(null)), Ok(json!("")));
}

// §4.4.4

#[test]
fn unions() {
    for union in ["anyOf", "oneOf"] {
        let schema = json!({union: [{"type": "number"}, {"type": "null"}]});
        assert_eq!(run_v(&schema, &json!("42")), Ok(json!(42)));
        assert_eq!(run_v(&schema, &json!(null)), Ok(json!(null)));
        assert_eq!(run_v(&schema, &json!("")), Ok(json!(0)));
        assert_eq!(
            run_v(&schema, &json!("x")),
            Err(vec!["v: expected number, got string".into()])
        );
    }
    let boolean_number = json!({"anyOf": [{"type": "boolean"}, {"type": "number"}]});
    assert_eq!(run_v(&boolean_number, &json!("1")), Ok(json!(true)));
    assert_eq!(
        run_v(&boolean_number, &json!("x")),
        Err(vec!["v: expected boolean, got string".into()])
    );
    let string_number = json!({"anyOf": [{"type": "string"}, {"type": "number"}]});
    assert_eq!(run_v(&string_number, &json!(true)), Ok(json!(1)));
    assert_eq!(run_v(&string_number, &json!(null)), Ok(json!("null")));
    let number_string = json!({"anyOf": [{"type": "number"}, {"type": "string"}]});
    assert_eq!(run_v(&number_string, &json!("1")), Ok(json!("1")));
    assert_eq!(run_v(&number_string, &json!(true)), Ok(json!(1)));
    assert_eq!(run_v(&number_string, &json!(null)), Ok(json!(0)));
    let integer_number = json!({"oneOf": [{"type": "integer"}, {"type": "number"}]});
    assert_eq!(
        run_v(&integer_number, &json!(1)),
        Err(vec!["v: matches more than one alternative".into()])
    );
    assert_eq!(run_v(&integer_number, &json!(1.5)), Ok(json!(1.5)));
    assert!(run_v(&integer_number, &json!("2")).is_err());
    let all_of = json!({"allOf": [{"type": "number"}, {"minimum": 3}]});
    assert_eq!(run_v(&all_of, &json!("5")), Ok(json!(5)));
    assert_eq!(
        run_v(&all_of, &json!("1")),
        Err(vec!["v: expected >= 3".into()])
    );
}

#[test]
fn enums_and_consts() {
    let letters = json!({"enum": ["a", "b"]});
    assert_eq!(
        run_v(&letters, &json!("c")),
        Err(vec![r#"v: expected one of ["a","b"]"#.into()])
    );
    let numbers = json!({"enum": [1, 2, 3]});
    assert_eq!(run_v(&numbers, &json!("2")), Ok(json!(2)));
    assert_eq!(run_v(&numbers, &json!(true)), Ok(json!(1)));
    assert_eq!(
        run_v(&numbers, &json!("4")),
        Err(vec!["v: expected one of [1,2,3]".into()])
    );
    let booleans = json!({"enum": [true, false]});
    for input in [json!("true"), json!("1"), json!(1)] {
        assert_eq!(run_v(&booleans, &input), Ok(json!(true)), "{input}");
    }
    assert!(run_v(&json!({"enum": [null, "x"]}), &json!("null")).is_err());
    assert_eq!(
        run_v(&json!({"type": "string", "enum": ["1", "2"]}), &json!(1)),
        Err(vec!["v: expected string, got number".into()])
    );
    let integers = json!({"type": "integer", "enum": [1, 2]});
    assert_eq!(run_v(&integers, &json!("1")), Ok(json!(1)));
    assert_eq!(
        run_v(&integers, &json!(1.5)),
        Err(vec!["v: expected integer, got number".into()])
    );
    assert_eq!(run_v(&json!({"const": 5}), &json!("5")), Ok(json!(5)));
    assert_eq!(
        run_v(&json!({"const": 5}), &json!(6)),
        Err(vec!["v: expected 5".into()])
    );
    assert_eq!(
        run_v(&json!({"const": "a"}), &json!("b")),
        Err(vec![r#"v: expected "a""#.into()])
    );
    for input in [json!("true"), json!(1), json!("1")] {
        assert_eq!(
            run_v(&json!({"const": true}), &input),
            Ok(json!(true)),
            "{input}"
        );
    }
    for input in [json!("null"), json!(""), json!(0)] {
        assert_eq!(
            run_v(&json!({"const": null}), &input),
            Err(vec!["v: expected null".into()])
        );
    }
    assert_eq!(
        run_v(&json!({"const": {"a": 1}}), &json!({"a": 2})),
        Err(vec![r#"v: expected {"a":1}"#.into()])
    );
}

#[test]
fn object_union_branches() {
    let schema = json!({"anyOf": [
        {"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]},
        {"type": "object", "properties": {"b": {"type": "string"}}, "required": ["b"]}
    ]});
    assert_eq!(run_v(&schema, &json!({"a": "1"})), Ok(json!({"a": 1})));
    assert_eq!(
        run_v(&schema, &json!({"b": 1})),
        Err(vec!["v.b: expected string, got number".into()])
    );
    assert_eq!(
        run_v(&schema, &json!({"c": 1})),
        Err(vec!["v.a: missing".into()])
    );
}

// §4.4.5

#[test]
fn nested_optional_nulls() {
    let schema = json!({"type": "object", "properties": {
        "o": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["b"]},
        "l": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}}
    }});
    assert_eq!(
        run(&schema, &json!({"o": {"a": null, "b": null}})),
        Ok(json!({"o": {"b": 0}}))
    );
    assert_eq!(
        run(&schema, &json!({"l": [{"a": null}]})),
        Ok(json!({"l": [{}]}))
    );
}

#[test]
fn extra_properties() {
    let numbers = json!({"type": "object", "additionalProperties": {"type": "number"}});
    assert_eq!(run(&numbers, &json!({"k": null})), Ok(json!({"k": 0})));
    let booleans = json!({"type": "object", "additionalProperties": {"type": "boolean"}});
    assert_eq!(
        run(&booleans, &json!({"b": "true", "c": 0})),
        Ok(json!({"b": true, "c": false}))
    );
    let patterns = json!({"type": "object", "patternProperties": {"^n": {"type": "number"}}});
    assert_eq!(
        run(&patterns, &json!({"n1": "5", "z": "6"})),
        Ok(json!({"n1": 5, "z": "6"}))
    );
    let open = json!({"type": "object", "properties": {"a": {"type": "number"}}});
    assert_eq!(
        run(&open, &json!({"x": "1", "a": "2"})),
        Ok(json!({"x": "1", "a": 2}))
    );
}

#[test]
fn refs() {
    let schema = json!({"type": "object", "$defs": {"N": {"type": "number"}},
        "properties": {"r": {"$ref": "#/$defs/N"}}, "required": ["r"]});
    assert_eq!(run(&schema, &json!({"r": "5"})), Ok(json!({"r": 5})));
    assert_eq!(
        run(&schema, &json!({"r": "x"})),
        Err(vec!["r: expected number, got string".into()])
    );
    let optional = json!({"type": "object", "$defs": {"N": {"type": "number"}},
        "properties": {"r": {"$ref": "#/$defs/N"}}});
    assert_eq!(run(&optional, &json!({"r": null})), Ok(json!({"r": 0})));
}

#[test]
fn recursive_tree() {
    let schema = json!({"$id": "T", "type": "object", "properties": {
        "name": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "T"}}
    }, "required": ["name"]});
    assert_eq!(
        run(
            &schema,
            &json!({"name": "a", "children": [{"name": "b", "children": "x"}, {}]})
        ),
        Err(vec![
            "children.0.children.0: expected object, got string".into(),
            "children.1.name: missing".into()
        ])
    );
    assert_eq!(
        run(&schema, &json!({"name": "a", "children": {"name": "b"}})),
        Ok(json!({"name": "a", "children": [{"name": "b"}]}))
    );
}

#[test]
fn root_without_type_and_key_order() {
    let schema = json!({"properties": {"n": {"type": "number"}}});
    assert_eq!(run(&schema, &json!({"n": "5"})), Ok(json!({"n": 5})));
    let ordered =
        json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}});
    let coerced = run(&ordered, &json!({"a": "1", "z": 1, "b": "2"})).unwrap();
    assert_eq!(
        serde_json::to_string(&coerced).unwrap(),
        r#"{"a":1,"z":1,"b":2}"#
    );
}

#[test]
fn defaults_are_never_inserted() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "number", "default": 3}}});
    assert_eq!(run(&schema, &json!({})), Ok(json!({})));
}

#[test]
fn formats_do_not_coerce() {
    assert_eq!(
        run_v(
            &json!({"type": "string", "format": "date"}),
            &json!(20200101)
        ),
        Err(vec!["v: expected string, got number".into()])
    );
}

#[test]
fn the_input_is_never_modified() {
    let schema =
        json!({"type": "object", "properties": {"n": {"type": "number"}, "s": {"type": "string"}}});
    let arguments = json!({"n": "1", "s": null});
    let before = arguments.clone();
    assert_eq!(run(&schema, &arguments), Ok(json!({"n": 1})));
    assert_eq!(arguments, before);
}
