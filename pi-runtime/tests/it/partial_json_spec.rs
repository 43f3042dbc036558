//! Every example of SPEC §6.2 (partial arguments) and §6.4 (the final parse).

use crate::json_support::final_parse;
use pi_runtime::json::{PartialJsonParser, parse_partial};
use serde_json::{Value, json};

/// `parse_partial` of `text`, and the same text fed one character at a time.
fn check(text: &str, expected: Value) {
    assert_eq!(parse_partial(text), expected, "whole text {text:?}");
    let mut parser = PartialJsonParser::new();
    let mut arguments = json!({});
    let mut buffer = [0; 4];
    for character in text.chars() {
        parser.push(character.encode_utf8(&mut buffer), &mut arguments);
    }
    assert_eq!(arguments, expected, "per character {text:?}");
}

/// Feed `deltas` to one parser; after each, the arguments are the matching `expected`.
fn check_deltas(deltas: &[&str], expected: &[Value]) {
    let mut parser = PartialJsonParser::new();
    let mut arguments = json!({});
    for (delta, expected) in deltas.iter().zip(expected) {
        parser.push(delta, &mut arguments);
        assert_eq!(&arguments, expected, "after {delta:?}");
    }
    assert_eq!(deltas.len(), expected.len());
}

#[test]
fn nothing_yet() {
    for text in [
        "",
        "   \n\t ",
        "{",
        "{\"",
        "{\"pa",
        "{\"path\"",
        "{\"path\":",
        "{\"path\": ",
    ] {
        check(text, json!({}));
    }
    check(r#"{"path":""#, json!({"path": ""}));
}

#[test]
fn unterminated_strings() {
    check(r#"{"path":"REA "#, json!({"path": "REA "}));
    check(r#"{"a":"x\"#, json!({"a": "x"}));
    check(r#"{"a":"x\u00"#, json!({"a": "x"}));
    check(r#"{"a":"x\u0041"#, json!({"a": "xA"}));
}

#[test]
fn escapes() {
    check(
        r#"{"s":"\" \\ \/ \b \f \n \r \t \u00e9"}"#,
        json!({"s": "\" \\ / \u{8} \u{c} \n \r \t é"}),
    );
    check(r#"{"p":"A\H"#, json!({"p": "A\\H"}));
    check(r#"{"p":"A\u12G4"}"#, json!({"p": "A\\u12G4"}));
    check("{\"t\":\"col1\tcol", json!({"t": "col1\tcol"}));
    check(r#"{"e":"\ud83d\ude00"}"#, json!({"e": "😀"}));
}

#[test]
fn containers() {
    check(r#"{"a":[1,2"#, json!({"a": [1, 2]}));
    check(r#"{"a":{"b":"#, json!({"a": {}}));
    check(r#"{"a":["#, json!({"a": []}));
}

#[test]
fn literals() {
    check(r#"{"a":t"#, json!({"a": true}));
    check(r#"{"a":nul"#, json!({"a": null}));
    check(r#"{"a":fals"#, json!({"a": false}));
    check(r#"{"a":x"#, json!({}));
}

#[test]
fn numbers() {
    check(r#"{"a":12"#, json!({"a": 12}));
    check(r#"{"a":1e"#, json!({"a": 1}));
    check(r#"{"a":1.5E+"#, json!({"a": 1.5}));
    check(r#"{"a":-1.5e-3"#, json!({"a": -0.0015}));
    for text in [r#"{"a":-"#, r#"{"a":1."#, r#"{"a":01"#] {
        check(text, json!({}));
    }
}

#[test]
fn finished_tokens_that_are_not_json_are_dropped() {
    for text in [
        r#"{"a":true1}"#,
        r#"{"a":nulll}"#,
        r#"{"a":TRUE}"#,
        r#"{"a":00}"#,
        r#"{"a":NaN}"#,
        r#"{"a":Infinity"#,
        r#"{"a":1e5x"#,
    ] {
        check(text, json!({}));
    }
}

#[test]
fn malformed_structure_is_read_leniently() {
    check(r#"{"a" 1}"#, json!({"a": 1}));
    check(r#"{"a": 1 "b": 2}"#, json!({"a": 1, "b": 2}));
    check(r#"{"a":[1 2]}"#, json!({"a": [1, 2]}));
    check(r#"{"a":1,,"b":2}"#, json!({"a": 1, "b": 2}));
    check(r#"{"a":1,"#, json!({"a": 1}));
    check(r#"]{"a":1}"#, json!({"a": 1}));
    check(r#"{"a":"b"]}"#, json!({"a": "b"}));
    check(r#"{"a":[}"#, json!({"a": []}));
    check(r#"{"a":1 2}"#, json!({"a": 1}));
    check(r#"{"a":1 {"b":2}}"#, json!({"a": 1}));
    check(r#"{"a", "b":1}"#, json!({"b": 1}));
    check(r#"x{"a":1}"#, json!({"a": 1}));
    check(r#"{"a":1}{"b":2}"#, json!({"a": 1}));
    check(r#"{"a":1} trailing"#, json!({"a": 1}));
    check(r#"{'a': 1}"#, json!({}));
}

#[test]
fn roots_that_are_not_objects_show_nothing() {
    for text in [
        "null",
        "42",
        "[1,2",
        "\"str",
        "tr",
        "[{\"a\":1}]",
        "\"a\"{\"b\":1}",
    ] {
        check(text, json!({}));
    }
}

#[test]
fn duplicate_keys_keep_the_first_position() {
    check(r#"{"k":"v","z":1,"k":"w"}"#, json!({"k": "w", "z": 1}));
    // While the duplicate's number is unfinished, the old value is what shows.
    check(r#"{"k":"v","z":1,"k":1."#, json!({"k": "v", "z": 1}));
    check(r#"{"k":"v","z":1,"k":1.5"#, json!({"k": 1.5, "z": 1}));
}

#[test]
fn an_invalid_number_disappears_at_its_delimiter() {
    // SPEC §6.2 [RUST]: no stale preview.
    check_deltas(
        &[r#"{"d":1,"e":1e"#, ","],
        &[json!({"d": 1, "e": 1}), json!({"d": 1})],
    );
}

#[test]
fn each_delta_changes_what_it_read() {
    check_deltas(
        &[
            r#"{"edits":[{"new"#,
            r#"Text":"fn ma"#,
            r#"in() {\n"#,
            "",
            "  ",
            "",
            r#"}"}],"n":4"#,
            "2",
            "}",
        ],
        &[
            json!({"edits": [{}]}),
            json!({"edits": [{"newText": "fn ma"}]}),
            json!({"edits": [{"newText": "fn main() {\n"}]}),
            json!({"edits": [{"newText": "fn main() {\n"}]}),
            json!({"edits": [{"newText": "fn main() {\n  "}]}),
            json!({"edits": [{"newText": "fn main() {\n  "}]}),
            json!({"edits": [{"newText": "fn main() {\n  }"}], "n": 4}),
            json!({"edits": [{"newText": "fn main() {\n  }"}], "n": 42}),
            json!({"edits": [{"newText": "fn main() {\n  }"}], "n": 42}),
        ],
    );
}

#[test]
fn duplicate_keys_across_deltas() {
    check_deltas(
        &[
            r#"{"path":"a"#,
            r#"b","n":1"#,
            r#"2,"n":-"#,
            r#"7,"path":"c"#,
            r#"d","list":[tr"#,
            r#"ue,{"k":"v"}],"n":"x"}"#,
        ],
        &[
            json!({"path": "a"}),
            json!({"path": "ab", "n": 1}),
            // `-` is no number yet: the duplicate `n` shows its old value.
            json!({"path": "ab", "n": 12}),
            // A duplicate key keeps its first position.
            json!({"path": "c", "n": -7}),
            json!({"path": "cd", "n": -7, "list": [true]}),
            json!({"path": "cd", "n": "x", "list": [true, {"k": "v"}]}),
        ],
    );
}

#[test]
fn escapes_in_a_string_that_is_already_showing() {
    check_deltas(
        &[
            r#"{"pa"#,
            r#"th":"src/m"#,
            r#"ain"#,
            r#".rs\n"#,
            r#"x","k\u0065y":"a\"#,
            r#"tb","n":"#,
            r#""plain"}"#,
        ],
        &[
            json!({}),
            json!({"path": "src/m"}),
            json!({"path": "src/main"}),
            json!({"path": "src/main.rs\n"}),
            json!({"path": "src/main.rs\nx", "key": "a"}),
            json!({"path": "src/main.rs\nx", "key": "a\tb"}),
            json!({"path": "src/main.rs\nx", "key": "a\tb", "n": "plain"}),
        ],
    );
    check_deltas(
        &[r#"{"list":["ab"#, r#"c\n","d"#],
        &[json!({"list": ["ab"]}), json!({"list": ["abc\n", "d"]})],
    );
}

#[test]
fn the_final_parse() {
    assert_eq!(final_parse(""), (json!({}), None));
    assert_eq!(final_parse(" \n"), (json!({}), None));
    assert_eq!(final_parse(r#"{"p":"A\H"}"#), (json!({"p": "A\\H"}), None));
    assert_eq!(
        final_parse("{\"t\":\"a\tb\"}"),
        (json!({"t": "a\tb"}), None)
    );
    assert_eq!(
        final_parse(r#"{"command":"ec"#),
        (
            json!({}),
            Some(
                "EOF while parsing a string at line 1 column 14\n\nReceived arguments:\n{\"command\":\"ec"
                    .into()
            )
        )
    );
    assert_eq!(
        final_parse("[1,2]"),
        (
            json!({}),
            Some("Tool arguments must be a JSON object\n\nReceived arguments:\n[1,2]".into())
        )
    );
    assert_eq!(
        final_parse(r#"{"a":1}{"b":2}"#).1.as_deref(),
        Some("trailing characters at line 1 column 8\n\nReceived arguments:\n{\"a\":1}{\"b\":2}")
    );
    assert_eq!(final_parse(" {\"a\":1} \n"), (json!({"a": 1}), None));
    assert_eq!(
        final_parse(r#"{"s":"\ud83d"}"#),
        (json!({"s": "\u{fffd}"}), None)
    );
}

#[test]
fn the_parser_offers_the_final_parse() {
    let mut parser = PartialJsonParser::new();
    let mut arguments = json!({});
    parser.push(r#"{"command":"ec"#, &mut arguments);
    assert_eq!(arguments, json!({"command": "ec"}));
    assert_eq!(
        parser.finish(),
        pi_runtime::json::parse_tool_call_arguments(r#"{"command":"ec"#)
    );
}
