//! Property tests of the incremental parser: valid documents cut anywhere, and arbitrary
//! JSON-like text cut anywhere.

use crate::json_support::final_parse;
use pi_runtime::json::{PartialJsonParser, parse_partial};
use proptest::prelude::*;
use serde_json::Value;

/// Whitespace JSON allows between tokens.
fn blank() -> impl Strategy<Value = &'static str> {
    prop_oneof![4 => Just(""), 1 => Just(" "), 1 => Just("\n  "), 1 => Just("\t"), 1 => Just("\r\n")]
}

/// A number in any JSON form (kept within f64 range, which serde_json requires).
fn number() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        prop_oneof![Just("0".to_owned()), "[1-9][0-9]{0,24}"],
        prop::option::of("[0-9]{1,24}"),
        prop::option::of(("[eE]", "[+-]?", "[0-9]{1,2}")),
    )
        .prop_map(|(negative, integer, fraction, exponent)| {
            let mut text = String::new();
            if negative {
                text.push('-');
            }
            text.push_str(&integer);
            if let Some(fraction) = fraction {
                text.push('.');
                text.push_str(&fraction);
            }
            if let Some((marker, sign, digits)) = exponent {
                text.push_str(&format!("{marker}{sign}{digits}"));
            }
            text
        })
}

/// One piece of a string literal's inside.
fn string_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-zA-Z0-9 _./-]{1,12}",
        2 => "[é中文ß😀🦀\u{2028}\u{7f}]{1,4}",
        2 => prop::sample::select(vec!["\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"])
            .prop_map(str::to_owned),
        1 => (0x20u32..0xD800).prop_map(|code| format!("\\u{code:04x}")),
        1 => (0xE000u32..0x10000).prop_map(|code| format!("\\u{code:04X}")),
        1 => (0x10000u32..0x110000).prop_map(|code| {
            let code = code - 0x10000;
            format!("\\u{:04x}\\u{:04X}", 0xD800 + (code >> 10), 0xDC00 + (code & 0x3ff))
        }),
    ]
}

fn string() -> impl Strategy<Value = String> {
    prop::collection::vec(string_piece(), 0..6)
        .prop_map(|pieces| format!("\"{}\"", pieces.concat()))
}

fn value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        3 => number(),
        3 => string(),
        1 => prop::sample::select(vec!["true", "false", "null"]).prop_map(str::to_owned),
    ];
    leaf.prop_recursive(6, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec((blank(), inner.clone(), blank()), 0..5).prop_map(|items| {
                let items: Vec<String> = items
                    .into_iter()
                    .map(|(a, item, b)| format!("{a}{item}{b}"))
                    .collect();
                format!("[{}]", items.join(","))
            }),
            object(inner),
        ]
    })
}

fn object(inner: impl Strategy<Value = String>) -> impl Strategy<Value = String> {
    prop::collection::vec((string(), blank(), inner, blank()), 0..5).prop_map(|members| {
        let members: Vec<String> = members
            .into_iter()
            .map(|(key, a, value, b)| format!("{key}{a}:{b}{value}"))
            .collect();
        format!("{{{}}}", members.join(","))
    })
}

/// A valid arguments document, sometimes wrapped in deep nesting.
fn document() -> impl Strategy<Value = String> {
    (object(value()), 0usize..100, any::<bool>()).prop_map(|(body, depth, arrays)| {
        if depth < 80 {
            return body;
        }
        let depth = depth - 20;
        let (open, close) = if arrays { ("[", "]") } else { ("{\"k\":", "}") };
        format!(
            "{{\"deep\":{}{body}{}}}",
            open.repeat(depth),
            close.repeat(depth)
        )
    })
}

/// Cut `text` at the given fractions of its length, snapped to character boundaries.
fn cut(text: &str, cuts: &[f64]) -> Vec<usize> {
    let mut ends: Vec<usize> = cuts
        .iter()
        .map(|fraction| {
            let mut end = (fraction * text.len() as f64) as usize;
            while !text.is_char_boundary(end) {
                end += 1;
            }
            end
        })
        .chain([text.len()])
        .collect();
    ends.sort_unstable();
    ends
}

/// Feed `text` cut at `ends` into one value, as providers do; after every delta the value is
/// the partial arguments of the text so far, whatever the cuts before it.
fn stream(text: &str, ends: &[usize]) -> Result<Value, TestCaseError> {
    let mut parser = PartialJsonParser::new();
    let mut arguments = Value::Object(Default::default());
    let mut start = 0;
    for &end in ends {
        parser.push(&text[start..end], &mut arguments);
        prop_assert_eq!(
            &arguments,
            &parse_partial(&text[..end]),
            "prefix {:?}",
            &text[..end]
        );
        start = end;
    }
    prop_assert_eq!(parser.text(), text);
    Ok(arguments)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn valid_documents_cut_anywhere(
        text in document(),
        cuts in prop::collection::vec(0.0..1.0f64, 0..24),
    ) {
        let expected: Value = serde_json::from_str(&text).map_err(|error| {
            TestCaseError::fail(format!("generator made invalid JSON: {error}: {text}"))
        })?;
        let value = stream(&text, &cut(&text, &cuts))?;
        prop_assert_eq!(&value, &expected);
        prop_assert_eq!(final_parse(&text), (expected, None));
    }

    #[test]
    fn valid_documents_byte_by_byte(text in object(value())) {
        let ends: Vec<usize> = (1..=text.len()).filter(|&end| text.is_char_boundary(end)).collect();
        let value = stream(&text, &ends)?;
        prop_assert_eq!(value, serde_json::from_str::<Value>(&text).unwrap_or_default());
    }

    #[test]
    fn duplicate_keys_cut_anywhere(
        members in prop::collection::vec((0..3usize, value()), 1..8),
        wide in 0..20usize,
        cuts in prop::collection::vec(0.0..1.0f64, 0..24),
    ) {
        // `wide` distinct keys first, so that wide objects look duplicates up in their index.
        let members: Vec<String> = (0..wide)
            .map(|index| format!("\"w{index}\":{index}"))
            .chain(members.iter().map(|(key, value)| format!("\"{}\":{value}", ["a", "b", "c"][*key])))
            .collect();
        let text = format!("{{{}}}", members.join(","));
        let value = stream(&text, &cut(&text, &cuts))?;
        prop_assert_eq!(value, serde_json::from_str::<Value>(&text).unwrap_or_default());
    }

    #[test]
    fn any_json_like_text_cut_anywhere(
        text in "[{}\\[\\]\",: \\\\tfrunlsae0-9.eE+\\-xu\u{e9}\u{1f600}\t\n]{0,80}",
        cuts in prop::collection::vec(0.0..1.0f64, 0..12),
    ) {
        let value = stream(&text, &cut(&text, &cuts))?;
        prop_assert!(value.is_object());
        // The final parse never panics either, and fails only with the raw text attached.
        let (arguments, error) = final_parse(&text);
        if let Some(error) = error {
            prop_assert_eq!(arguments, Value::Object(Default::default()));
            let suffix = format!("\n\nReceived arguments:\n{text}");
            prop_assert!(error.ends_with(&suffix));
        }
    }
}
