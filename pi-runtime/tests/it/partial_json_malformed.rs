//! Malformed and hostile input: exact values, no panics, no stack overflow, linear time.

use crate::json_support::final_parse;
use pi_runtime::json::{MAX_DEPTH, PartialJsonError, PartialJsonParser, parse_partial};
use serde_json::{Value, json};

#[test]
fn raw_control_characters_are_kept_while_streaming_and_escaped_by_the_final_parse() {
    let text = "{\"t\":\"a\u{0}b\u{1f}c\td\ne\"}";
    assert_eq!(parse_partial(text), json!({"t": "a\u{0}b\u{1f}c\td\ne"}));
    assert_eq!(
        final_parse(text),
        (json!({"t": "a\u{0}b\u{1f}c\td\ne"}), None)
    );
}

#[test]
fn bad_escapes() {
    assert_eq!(
        parse_partial(r#"{"r":"\d+\.\w*"}"#),
        json!({"r": "\\d+\\.\\w*"})
    );
    assert_eq!(parse_partial(r#"{"u":"\u12"}"#), json!({"u": "\\u12"}));
    assert_eq!(parse_partial(r#"{"u":"\uZZZZ"#), json!({"u": "\\uZZZZ"}));
    assert_eq!(parse_partial(r#"{"x":"\é"}"#), json!({"x": "\\é"}));
    assert_eq!(
        final_parse(r#"{"r":"\d+\.\w*"}"#),
        (json!({"r": "\\d+\\.\\w*"}), None)
    );
}

#[test]
fn stray_and_mismatched_closers() {
    assert_eq!(parse_partial("]]}}{\"a\":1}"), json!({"a": 1}));
    assert_eq!(
        parse_partial(r#"{"a":[1,{"b":2]]"#),
        json!({"a": [1, {"b": 2}]})
    );
    assert_eq!(parse_partial(r#"{"a":1}}}"#), json!({"a": 1}));
    assert_eq!(
        final_parse(r#"{"a":1}}"#).1.as_deref(),
        Some("trailing characters at line 1 column 8\n\nReceived arguments:\n{\"a\":1}}")
    );
}

#[test]
fn a_byte_order_mark() {
    // While streaming it is a word before the root, skipped like any other.
    assert_eq!(parse_partial("\u{feff}{\"a\":1}"), json!({"a": 1}));
    // The final parse refuses it (SPEC §6.4).
    assert_eq!(
        final_parse("\u{feff}{\"a\":1}"),
        (
            json!({}),
            Some(
                "expected value at line 1 column 1\n\nReceived arguments:\n\u{feff}{\"a\":1}"
                    .into()
            )
        )
    );
}

#[test]
fn a_ten_megabyte_string() {
    let body = "fn main() { println!(\\\"hi\\\"); }\\n".repeat(10 * 1024 * 1024 / 34);
    let text = format!("{{\"content\":\"{body}\"}}");
    let decoded = "fn main() { println!(\"hi\"); }\n".repeat(10 * 1024 * 1024 / 34);
    let mut parser = PartialJsonParser::new();
    let mut arguments = json!({});
    for chunk in text.as_bytes().chunks(4096) {
        parser.push(
            std::str::from_utf8(chunk).unwrap_or_default(),
            &mut arguments,
        );
    }
    assert_eq!(arguments, json!({"content": decoded}));
    assert_eq!(final_parse(&text), (json!({"content": decoded}), None));
}

#[test]
fn a_long_number_streamed_digit_by_digit() {
    let digits = "7".repeat(50_000);
    let mut parser = PartialJsonParser::new();
    let mut arguments = json!({});
    parser.push("{\"n\":1.", &mut arguments);
    for _ in 0..digits.len() {
        parser.push("7", &mut arguments);
    }
    let expected: Value = serde_json::from_str(&format!("1.{digits}")).unwrap_or_default();
    assert_eq!(arguments, json!({"n": expected}));
    parser.push("}", &mut arguments);
    assert_eq!(arguments, json!({"n": expected}));
}

#[test]
fn numbers_beyond_f64_show_as_null() {
    assert_eq!(parse_partial(r#"{"n":1e400}"#), json!({"n": null}));
    assert_eq!(parse_partial(r#"{"n":-1e400"#), json!({"n": null}));
    assert_eq!(parse_partial(r#"{"n":1e-400}"#), json!({"n": 0.0}));
}

#[test]
fn the_depth_limit_matches_the_final_parse() {
    let nested = |depth: usize| format!("{}{}", "[".repeat(depth - 1), "]".repeat(depth - 1));
    let at_limit = format!("{{\"a\":{}}}", nested(MAX_DEPTH));
    assert!(serde_json::from_str::<Value>(&at_limit).is_ok());
    let mut parser = PartialJsonParser::new();
    let mut arguments = json!({});
    parser.push(&at_limit, &mut arguments);
    assert_eq!(parser.error(), None);
    assert_eq!(
        arguments,
        serde_json::from_str::<Value>(&at_limit).unwrap_or_default()
    );

    let beyond = format!("{{\"a\":{}}}", nested(MAX_DEPTH + 1));
    assert!(serde_json::from_str::<Value>(&beyond).is_err());
    let mut parser = PartialJsonParser::new();
    parser.push(&beyond, &mut json!({}));
    assert_eq!(
        parser.error(),
        Some(&PartialJsonError::TooDeep { limit: MAX_DEPTH })
    );
}

#[test]
fn a_hundred_thousand_levels_of_nesting() {
    // Live containers: the value keeps what was read before the level that went too deep.
    let text = format!("{{\"a\":\"b\",\"c\":{}", "[".repeat(100_000));
    let mut parser = PartialJsonParser::new();
    let mut arguments = json!({});
    parser.push(&text, &mut arguments);
    let mut expected = json!([]);
    for _ in 0..MAX_DEPTH - 2 {
        expected = json!([expected]);
    }
    assert_eq!(arguments, json!({"a": "b", "c": expected}));
    assert_eq!(
        parser.error().map(ToString::to_string).as_deref(),
        Some("the arguments nest more than 127 levels deep; the text from there on is not shown")
    );
    // Later deltas are kept for the final parse, which reports the depth.
    parser.push("]]", &mut arguments);
    assert_eq!(parser.text().len(), text.len() + 2);
    let pi_runtime::json::ParsedArguments {
        arguments, error, ..
    } = parser.finish();
    assert_eq!(arguments, json!({}));
    assert!(error.is_some_and(|error| error.starts_with("recursion limit exceeded")));

    // Skipped containers (a root that is not an object) stop at the same depth.
    let mut parser = PartialJsonParser::new();
    let mut arguments = json!({});
    parser.push(&"[{\"a\":".repeat(100_000), &mut arguments);
    assert_eq!(arguments, json!({}));
    assert_eq!(
        parser.error(),
        Some(&PartialJsonError::TooDeep { limit: MAX_DEPTH })
    );

    // Objects, one character at a time.
    let mut parser = PartialJsonParser::new();
    let mut arguments = json!({});
    for _ in 0..100_000 {
        parser.push("{\"k\":", &mut arguments);
    }
    assert!(parser.error().is_some());
}

#[test]
fn text_after_the_root_is_ignored_but_kept() {
    let mut parser = PartialJsonParser::new();
    let mut arguments = json!({});
    parser.push(r#"{"a":1} {"b":"#, &mut arguments);
    parser.push(r#"2}"#, &mut arguments);
    assert_eq!(arguments, json!({"a": 1}));
    assert_eq!(parser.text(), r#"{"a":1} {"b":2}"#);
}
