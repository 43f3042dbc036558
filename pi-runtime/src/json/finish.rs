//! The final parse of a finished call: strict, then repaired, then the object
//! check, with the raw text in the error the model sees.

use crate::excerpt::{ARGUMENTS_EXCERPT_BYTES, excerpt_within};
use serde_json::{Map, Value};

/// The error text of arguments that parse but are not an object.
const NOT_AN_OBJECT: &str = "Tool arguments must be a JSON object";

/// A finished call's arguments: the object, or `{}` and the error the model sees.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ParsedArguments {
    /// The arguments object; `{}` when the text was not one.
    pub arguments: Value,
    /// Why the text is not an arguments object (the call's `argumentsError`), with the text.
    pub error: Option<String>,
}

impl ParsedArguments {
    fn object(arguments: Map<String, Value>) -> Self {
        ParsedArguments {
            arguments: Value::Object(arguments),
            error: None,
        }
    }
}

/// The final parse of a finished call, as pi's `parseToolCallArguments` does it.
///
/// Blank text is `{}`. Text that is not strict JSON is repaired inside its string literals
/// (raw control characters escaped, invalid backslashes doubled, lone surrogate escapes
/// replaced by `\ufffd`) and parsed strictly again. On failure the arguments are `{}` and the
/// error is the parser's message followed by the raw text:
///
/// ```
/// use pi_runtime::json::parse_tool_call_arguments;
/// use serde_json::json;
///
/// let parsed = parse_tool_call_arguments(r#"{"p":"A\H"}"#);
/// assert_eq!((parsed.arguments, parsed.error), (json!({"p": "A\\H"}), None));
///
/// let parsed = parse_tool_call_arguments("[1]");
/// assert_eq!(parsed.arguments, json!({}));
/// assert_eq!(
///     parsed.error.as_deref(),
///     Some("Tool arguments must be a JSON object\n\nReceived arguments:\n[1]")
/// );
/// ```
pub fn parse_tool_call_arguments(text: &str) -> ParsedArguments {
    if text.trim().is_empty() {
        return ParsedArguments::object(Map::new());
    }
    let error = match parse_with_repair(text) {
        Ok(Value::Object(arguments)) => return ParsedArguments::object(arguments),
        Ok(_) => NOT_AN_OBJECT.to_owned(),
        Err(error) => error.to_string(),
    };
    ParsedArguments {
        arguments: Value::Object(Map::new()),
        error: Some(format!(
            "{error}\n\nReceived arguments:\n{}",
            excerpt_within(text, ARGUMENTS_EXCERPT_BYTES)
        )),
    }
}

/// A strict parse; if it fails and repair changes the text, a strict parse of the repaired
/// text (whose error is the one reported).
pub fn parse_with_repair(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str(text).or_else(|error| match repair(text) {
        Some(repaired) => serde_json::from_str(&repaired),
        None => Err(error),
    })
}

/// Repair the inside of string literals: escape raw control characters, double a backslash
/// that starts no valid escape (or ends the text), and replace a lone surrogate escape with
/// `\ufffd`; `None` when nothing needed repair.
pub fn repair(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = String::new();
    // `text[copied..at]` is still to be copied unchanged; every edit sits at an ASCII byte, so
    // both ends are character boundaries.
    let mut copied = 0;
    let mut in_string = false;
    let mut at = 0;
    let edit = |out: &mut String, copied: &mut usize, at: usize, skip: usize, with: &str| {
        out.push_str(text.get(*copied..at).unwrap_or_default());
        out.push_str(with);
        *copied = at + skip;
    };
    while at < bytes.len() {
        let byte = bytes[at];
        if !in_string {
            in_string = byte == b'"';
            at += 1;
            continue;
        }
        match byte {
            b'"' => {
                in_string = false;
                at += 1;
            }
            b'\\' => match bytes.get(at + 1) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => at += 2,
                Some(b'u') if hex4(bytes, at + 2).is_some() => {
                    let code = hex4(bytes, at + 2).unwrap_or(0);
                    let low = bytes
                        .get(at + 6..at + 8)
                        .filter(|next| *next == b"\\u")
                        .and_then(|_| hex4(bytes, at + 8))
                        .filter(|low| (0xDC00..=0xDFFF).contains(low));
                    match code {
                        0xD800..=0xDBFF if low.is_some() => at += 12,
                        0xD800..=0xDFFF => {
                            edit(&mut out, &mut copied, at, 6, "\\ufffd");
                            at += 6;
                        }
                        _ => at += 6,
                    }
                }
                // Doubled; the next character is then read normally.
                _ => {
                    edit(&mut out, &mut copied, at, 1, "\\\\");
                    at += 1;
                }
            },
            0x00..=0x1f => {
                edit(&mut out, &mut copied, at, 1, &control_escape(byte));
                at += 1;
            }
            _ => at += 1,
        }
    }
    if copied == 0 {
        return None;
    }
    out.push_str(text.get(copied..).unwrap_or_default());
    Some(out)
}

/// The code unit of four hex digits at `at`.
fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = bytes.get(at..at + 4)?;
    digits.iter().try_fold(0, |code, &digit| {
        Some(code << 4 | char::from(digit).to_digit(16)?)
    })
}

fn control_escape(byte: u8) -> String {
    match byte {
        0x08 => "\\b".to_owned(),
        0x0c => "\\f".to_owned(),
        b'\n' => "\\n".to_owned(),
        b'\r' => "\\r".to_owned(),
        b'\t' => "\\t".to_owned(),
        _ => format!("\\u{byte:04x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn error_of(text: &str) -> String {
        parse_tool_call_arguments(text).error.unwrap_or_default()
    }

    /// `(arguments, error)`, to compare with literals.
    fn parts(text: &str) -> (Value, Option<String>) {
        let parsed = parse_tool_call_arguments(text);
        (parsed.arguments, parsed.error)
    }

    #[test]
    fn blank_text_is_no_arguments() {
        for text in ["", "  ", "\n\t "] {
            assert_eq!(parts(text), (json!({}), None));
        }
    }

    #[test]
    fn repairs_the_inside_of_strings() {
        assert_eq!(repair(r#"{"p":"A\H"}"#).as_deref(), Some(r#"{"p":"A\\H"}"#));
        assert_eq!(
            repair("{\"t\":\"a\tb\"}").as_deref(),
            Some(r#"{"t":"a\tb"}"#)
        );
        assert_eq!(
            repair("{\"t\":\"\u{1}\"}").as_deref(),
            Some(r#"{"t":"\u0001"}"#)
        );
        assert_eq!(repair(r#"{"t":"x\"#).as_deref(), Some(r#"{"t":"x\\"#));
        assert_eq!(
            repair(r#"{"u":"\u12G4"}"#).as_deref(),
            Some(r#"{"u":"\\u12G4"}"#)
        );
        assert_eq!(repair(r#"{"a":"ok\n\u00e9"}"#), None);
        // Outside strings nothing changes.
        assert_eq!(repair("{\t\"a\":1}"), None);
    }

    #[test]
    fn repaired_text_parses() {
        assert_eq!(parts(r#"{"p":"A\H"}"#), (json!({"p": "A\\H"}), None));
        assert_eq!(parts("{\"t\":\"a\tb\"}"), (json!({"t": "a\tb"}), None));
    }

    #[test]
    fn lone_surrogates_never_fail() {
        let cases = [
            (r#"{"s":"\ud83d"}"#, "\u{fffd}"),
            (r#"{"s":"\ude00x"}"#, "\u{fffd}x"),
            (r#"{"s":"\ud83d\ud83d\ude00"}"#, "\u{fffd}😀"),
            (r#"{"s":"\ud83d\ude00"}"#, "😀"),
            (r#"{"s":"\ud83d\n"}"#, "\u{fffd}\n"),
        ];
        for (text, expected) in cases {
            assert_eq!(parts(text), (json!({"s": expected}), None));
        }
    }

    #[test]
    fn not_an_object() {
        for text in ["null", "42", "[1,2]", "\"str\"", "true"] {
            assert_eq!(
                error_of(text),
                format!("Tool arguments must be a JSON object\n\nReceived arguments:\n{text}")
            );
        }
    }

    #[test]
    fn a_huge_invalid_text_is_quoted_in_part() {
        // 100,000 levels of nesting: serde_json refuses it, and the model gets a bounded echo.
        let text = "[".repeat(100_000);
        let error = error_of(&text);
        assert!(error.len() < 17 * 1024, "{} bytes", error.len());
        assert!(
            error.ends_with(&format!(
                "... ({} more bytes not shown)",
                100_000 - ARGUMENTS_EXCERPT_BYTES
            )),
            "{}",
            &error[error.len() - 60..]
        );
    }

    #[test]
    fn syntax_errors_carry_serde_json_message_and_raw_text() {
        assert_eq!(
            error_of(r#"{"command":"ec"#),
            "EOF while parsing a string at line 1 column 14\n\nReceived arguments:\n{\"command\":\"ec"
        );
        assert_eq!(
            error_of(r#"{"a":1}{"b":2}"#),
            "trailing characters at line 1 column 8\n\nReceived arguments:\n{\"a\":1}{\"b\":2}"
        );
        assert_eq!(
            error_of("\u{feff}{}"),
            "expected value at line 1 column 1\n\nReceived arguments:\n\u{feff}{}"
        );
        assert_eq!(parts("  {\"a\":1}\n"), (json!({"a": 1}), None));
    }

    #[test]
    fn the_reported_error_is_the_repaired_texts() {
        // Repair changed the text (the tab), so the second parse's error is reported.
        assert_eq!(
            error_of("{\"a\":\"\t\""),
            "EOF while parsing an object at line 1 column 9\n\nReceived arguments:\n{\"a\":\"\t\""
        );
    }
}
