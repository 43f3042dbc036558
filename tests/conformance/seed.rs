//! The seed's `parseStreamingJson` (SPEC §6.3): re-parse the whole text after every delta.
//!
//! Only the conformance runner's `parser: "parseStreamingJson"` option uses it; providers
//! use `pi_runtime::json::PartialJsonParser` (SPEC §6.2). Its lenient step
//! reproduces the `partial-json` 0.1.7 package pi calls, quirks included (it works on UTF-16
//! code units and JavaScript's `substring`), except where Rust cannot hold the value: `NaN`
//! and `Infinity` become `null` (what `JSON.stringify` writes for them) and lone surrogates
//! become U+FFFD (SPEC §0.3).

use serde_json::{Map, Value};

use pi_runtime::__conformance::{parse_with_repair, repair};

/// The seed's helper: blank → `{}`; the strict parse, with repair; else a lenient parse of
/// the text, then of the repaired text; else `{}`. A root that is not an object is returned
/// as it is.
pub(crate) fn parse_streaming_json(text: &str) -> Value {
    if text.trim().is_empty() {
        return Value::Object(Map::new());
    }
    if let Ok(value) = parse_with_repair(text) {
        return value;
    }
    let lenient = lenient(text).or_else(|| lenient(&repair(text)?));
    match lenient {
        Some(Value::Null) | None => Value::Object(Map::new()),
        Some(value) => value,
    }
}

/// `partial-json`'s `parse(text)` with every kind of partial value allowed.
fn lenient(text: &str) -> Option<Value> {
    let units: Vec<u16> = text.encode_utf16().collect();
    let start = units.iter().position(|&unit| !is_js_space(unit))?;
    let end = units.iter().rposition(|&unit| !is_js_space(unit))? + 1;
    Lenient {
        text: &units[start..end],
        at: 0,
    }
    .any()
}

/// What JavaScript's `String.prototype.trim` removes.
fn is_js_space(unit: u16) -> bool {
    matches!(
        unit,
        0x09..=0x0d
            | 0x20
            | 0xa0
            | 0x1680
            | 0x2000..=0x200a
            | 0x2028
            | 0x2029
            | 0x202f
            | 0x205f
            | 0x3000
            | 0xfeff
    )
}

struct Lenient<'a> {
    text: &'a [u16],
    at: usize,
}

impl Lenient<'_> {
    fn unit(&self, at: usize) -> Option<u16> {
        self.text.get(at).copied()
    }

    fn is(&self, at: usize, ascii: u8) -> bool {
        self.unit(at) == Some(u16::from(ascii))
    }

    /// JavaScript's `text.substring(from, to)`: clamped, and swapped when reversed.
    fn substring(&self, from: isize, to: isize) -> String {
        let clamp = |index: isize| index.clamp(0, self.text.len() as isize) as usize;
        let (mut from, mut to) = (clamp(from), clamp(to));
        if from > to {
            std::mem::swap(&mut from, &mut to);
        }
        String::from_utf16_lossy(&self.text[from..to])
    }

    /// JavaScript's `text.lastIndexOf(ascii)`, `-1` when absent.
    fn last_index_of(&self, ascii: u8) -> isize {
        self.text
            .iter()
            .rposition(|&unit| unit == u16::from(ascii))
            .map_or(-1, |index| index as isize)
    }

    fn rest_is_prefix_of(&self, word: &str) -> bool {
        let rest = &self.text[self.at.min(self.text.len())..];
        rest.len() < word.len() && word.encode_utf16().zip(rest).all(|(a, &b)| a == b)
    }

    fn starts_with(&self, word: &str) -> bool {
        let rest = &self.text[self.at.min(self.text.len())..];
        word.encode_utf16().count() <= rest.len()
            && word.encode_utf16().zip(rest).all(|(a, &b)| a == b)
    }

    fn skip_blank(&mut self) {
        while matches!(self.unit(self.at), Some(0x20 | 0x0a | 0x0d | 0x09)) {
            self.at += 1;
        }
    }

    fn any(&mut self) -> Option<Value> {
        self.skip_blank();
        if self.at >= self.text.len() {
            return None;
        }
        if self.is(self.at, b'"') {
            return self.string();
        }
        if self.is(self.at, b'{') {
            return Some(self.object());
        }
        if self.is(self.at, b'[') {
            return Some(self.array());
        }
        let words: [(&str, Value); 5] = [
            ("null", Value::Null),
            ("true", Value::Bool(true)),
            ("false", Value::Bool(false)),
            // Non-finite numbers: Rust has no JSON value for them; `JSON.stringify` writes null.
            ("Infinity", Value::Null),
            ("-Infinity", Value::Null),
        ];
        for (word, value) in words {
            let long_enough = word != "-Infinity" || self.text.len() - self.at > 1;
            if self.starts_with(word) || (long_enough && self.rest_is_prefix_of(word)) {
                self.at += word.len();
                return Some(value);
            }
        }
        if self.starts_with("NaN") || self.rest_is_prefix_of("NaN") {
            self.at += 3;
            return Some(Value::Null);
        }
        self.number()
    }

    fn string(&mut self) -> Option<Value> {
        let start = self.at as isize;
        let mut escape = false;
        self.at += 1;
        while self.at < self.text.len()
            && (!self.is(self.at, b'"') || (escape && self.is(self.at - 1, b'\\')))
        {
            escape = if self.is(self.at, b'\\') {
                !escape
            } else {
                false
            };
            self.at += 1;
        }
        let escape = isize::from(escape);
        if self.is(self.at, b'"') {
            self.at += 1;
            return js_parse(&self.substring(start, self.at as isize - escape));
        }
        js_parse(&(self.substring(start, self.at as isize - escape) + "\""))
            .or_else(|| js_parse(&(self.substring(start, self.last_index_of(b'\\')) + "\"")))
    }

    fn object(&mut self) -> Value {
        self.at += 1;
        self.skip_blank();
        let mut members = Map::new();
        while !self.is(self.at, b'}') {
            let before = self.at;
            self.skip_blank();
            if self.at >= self.text.len() {
                return Value::Object(members);
            }
            let Some(Value::String(key)) = self.string() else {
                return Value::Object(members);
            };
            self.skip_blank();
            // Whatever stands here is taken for the colon.
            self.at += 1;
            match self.any() {
                Some(value) => members.insert(key, value),
                None => return Value::Object(members),
            };
            self.skip_blank();
            if self.is(self.at, b',') {
                self.at += 1;
            }
            // partial-json would loop forever here; nothing a case can observe.
            if self.at == before {
                return Value::Object(members);
            }
        }
        self.at += 1;
        Value::Object(members)
    }

    fn array(&mut self) -> Value {
        self.at += 1;
        let mut items = Vec::new();
        while !self.is(self.at, b']') {
            let before = self.at;
            match self.any() {
                Some(value) => items.push(value),
                None => return Value::Array(items),
            }
            self.skip_blank();
            if self.is(self.at, b',') {
                self.at += 1;
            }
            if self.at == before {
                return Value::Array(items);
            }
        }
        self.at += 1;
        Value::Array(items)
    }

    fn number(&mut self) -> Option<Value> {
        if self.at == 0 {
            let whole = self.substring(0, self.text.len() as isize);
            if whole == "-" {
                return None;
            }
            return js_parse(&whole)
                .or_else(|| js_parse(&self.substring(0, self.last_index_of(b'e'))));
        }
        let start = self.at as isize;
        if self.is(self.at, b'-') {
            self.at += 1;
        }
        while self
            .unit(self.at)
            .is_some_and(|unit| ![b',', b']', b'}'].map(u16::from).contains(&unit))
        {
            self.at += 1;
        }
        let token = self.substring(start, self.at as isize);
        js_parse(&token).or_else(|| {
            if token == "-" {
                return None;
            }
            js_parse(&self.substring(start, self.last_index_of(b'e')))
        })
    }
}

/// `JSON.parse`, which accepts lone surrogate escapes (they decode to U+FFFD here).
fn js_parse(text: &str) -> Option<Value> {
    serde_json::from_str(text)
        .ok()
        .or_else(|| serde_json::from_str(&replace_lone_surrogates(text)?).ok())
}

/// `text` with every lone surrogate escape inside a string replaced by `\ufffd`; `None`
/// when it has none.
fn replace_lone_surrogates(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = String::new();
    // `text[copied..at]` is still to be copied; edits sit at ASCII bytes (char boundaries).
    let mut copied = 0;
    let mut in_string = false;
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        if !in_string || byte != b'\\' {
            in_string ^= byte == b'"';
            at += 1;
            continue;
        }
        let code = match bytes.get(at + 1) {
            Some(b'u') => hex4(bytes, at + 2),
            _ => None,
        };
        let low_follows = bytes.get(at + 6..at + 8) == Some(b"\\u")
            && hex4(bytes, at + 8).is_some_and(|low| (0xDC00..=0xDFFF).contains(&low));
        at += match code {
            Some(0xD800..=0xDBFF) if low_follows => 12,
            Some(0xD800..=0xDFFF) => {
                out.push_str(text.get(copied..at).unwrap_or_default());
                out.push_str("\\ufffd");
                copied = at + 6;
                6
            }
            Some(_) => 6,
            // Any other escape is two bytes.
            None => 2,
        };
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn spec_section_6_3_differences() {
        let cases = [
            (r#"{"path":"REA "#, json!({"path": "REA"})),
            (r#"{"p":"A\H"#, json!({"p": "A"})),
            ("{\"t\":\"col1\tcol", json!({})),
            (r#"{"a" 1}"#, json!({})),
            (r#"{"a":NaN}"#, json!({"a": null})),
            (r#"{"a":Infinity"#, json!({"a": null})),
            (r#"{"a":true1}"#, json!({"a": true})),
            ("null", json!(null)),
            ("42", json!(42)),
            (r#"[1,2,"thr"#, json!([1, 2, "thr"])),
            ("[1,2", json!([1, 2])),
            ("nul", json!({})),
            ("", json!({})),
            // `JSON.parse` takes lone surrogates, which Rust shows as U+FFFD.
            (r#"{"s":"\ud83dx"#, json!({"s": "\u{fffd}x"})),
            (
                r#"{"s":"a\\ud83d\ude00\udc00b"#,
                json!({"s": "a\\ud83d\u{fffd}\u{fffd}b"}),
            ),
            (r#"{"s":"\ud83d\ude00x"#, json!({"s": "😀x"})),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_streaming_json(text), expected, "{text}");
        }
    }

    #[test]
    fn complete_text_is_the_strict_parse() {
        assert_eq!(
            parse_streaming_json(r#"{"p":"A\H","t":"a	b"}"#),
            json!({"p": "A\\H", "t": "a\tb"})
        );
    }
}
