//! The text the model sees for invalid arguments (pi's wording) and the dotted form of an
//! error's location.

use std::fmt::Write as _;

use crate::excerpt::{ARGUMENTS_EXCERPT_BYTES, excerpt_within};
use serde_json::Value;

/// One step of a location inside the arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

/// One validation error: where and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Issue {
    /// The dotted path (`edits.0.newText`, `root`).
    pub(crate) path: String,
    /// Length of the location as a JSON Pointer string; a failed union reports the branch
    /// with the deeper first error.
    pub(crate) pointer_len: usize,
    pub(crate) message: String,
}

impl Issue {
    pub(crate) fn new(location: &[Segment<'_>], message: String) -> Self {
        Issue {
            path: dotted(location),
            pointer_len: pointer_len(location),
            message,
        }
    }
}

/// The dotted path of a location: `root` for the arguments themselves, otherwise the
/// unescaped segments joined with `.` (a key `a/b` stays `a/b`; the empty key gives an empty
/// segment).
pub(crate) fn dotted(location: &[Segment<'_>]) -> String {
    if location.is_empty() {
        return "root".to_owned();
    }
    let mut out = String::new();
    for (i, segment) in location.iter().enumerate() {
        if i > 0 {
            out.push('.');
        }
        match segment {
            Segment::Key(key) => out.push_str(key),
            Segment::Index(index) => {
                let _ = write!(out, "{index}");
            }
        }
    }
    out
}

fn pointer_len(location: &[Segment<'_>]) -> usize {
    location
        .iter()
        .map(|segment| {
            1 + match segment {
                Segment::Key(key) => key.len() + key.matches(['~', '/']).count(),
                Segment::Index(index) => index.to_string().len(),
            }
        })
        .sum()
}

/// `Validation failed for tool "<name>":` with one line per issue, then the arguments as
/// received (before coercion) in 2-space JSON.
pub(crate) fn validation_failed(tool_name: &str, issues: &[Issue], received: &Value) -> String {
    let mut text = format!("Validation failed for tool \"{tool_name}\":");
    for issue in issues {
        let _ = write!(text, "\n  - {}: {}", issue.path, issue.message);
    }
    text.push_str("\n\nReceived arguments:\n");
    let received = pretty(received);
    let _ = write!(
        text,
        "{}",
        excerpt_within(&received, ARGUMENTS_EXCERPT_BYTES)
    );
    text
}

/// `JSON.stringify(value, null, 2)`, numbers as serde_json writes them (not as JavaScript
/// does: `5.0` stays `5.0`, big integers stay exact).
pub(crate) fn pretty(value: &Value) -> String {
    // Serializing a `Value` to a string cannot fail: keys are strings and there is no I/O.
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// `JSON.stringify(value)`.
pub(crate) fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn dotted_paths() {
        use Segment::{Index, Key};
        assert_eq!(dotted(&[]), "root");
        assert_eq!(
            dotted(&[Key("edits"), Index(0), Key("newText")]),
            "edits.0.newText"
        );
        assert_eq!(dotted(&[Key("a/b"), Key("c~d")]), "a/b.c~d");
        assert_eq!(dotted(&[Key("x.y")]), "x.y");
        assert_eq!(dotted(&[Key("")]), "");
        assert_eq!(pointer_len(&[Key("a/b"), Index(10)]), 8);
    }

    #[test]
    fn seed_example_text() {
        let issues = [Issue::new(
            &[Segment::Key("b")],
            "expected number, got string".into(),
        )];
        assert_eq!(
            validation_failed("add", &issues, &json!({"a": 1, "b": "x"})),
            "Validation failed for tool \"add\":\n  - b: expected number, got string\n\nReceived arguments:\n{\n  \"a\": 1,\n  \"b\": \"x\"\n}"
        );
    }

    #[test]
    fn a_huge_received_block_is_quoted_in_part() {
        let issues = [Issue::new(
            &[Segment::Key("a")],
            "expected number, got string".into(),
        )];
        let text = validation_failed("t", &issues, &json!({"a": "x".repeat(1 << 20)}));
        assert!(text.len() < 17 * 1024, "{} bytes", text.len());
        assert!(text.ends_with("more bytes not shown)"));
    }

    #[test]
    fn received_block_layout() {
        assert_eq!(
            pretty(&json!({"o": {}, "l": []})),
            "{\n  \"o\": {},\n  \"l\": []\n}"
        );
        assert_eq!(pretty(&json!("str")), "\"str\"");
        assert_eq!(pretty(&json!(null)), "null");
        assert_eq!(
            pretty(&json!({"c": "\u{1}é"})),
            "{\n  \"c\": \"\\u0001é\"\n}"
        );
    }
}
