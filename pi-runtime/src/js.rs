//! JavaScript's whitespace, where pi's behaviour depends on it: `String.prototype.trim`, the
//! `\s` of its regular expressions, and `Number(string)` all use it.

/// JavaScript's whitespace (the `WhiteSpace` and `LineTerminator` productions). It differs
/// from `char::is_whitespace`: U+FEFF is in, U+0085 and U+001C..U+001F are out, and the
/// difference is visible in snippets, names and coerced numbers.
pub(crate) fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// JavaScript's `String.prototype.trim`.
pub(crate) fn js_trim(text: &str) -> &str {
    text.trim_matches(is_js_space)
}

/// JavaScript's `String(number)`: the shortest digits that read back as `x`, in plain
/// notation from 1e-7 up to 1e21 and as `1e+21` / `1.5e-7` outside; `-0` is `0`.
#[cfg_attr(not(feature = "codemode"), allow(dead_code))]
pub(crate) fn js_number(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if x == 0.0 {
        return "0".to_owned();
    }
    // `{:e}` gives the shortest round-trip digits: `-1.5e-7`, `1e21`.
    let scientific = format!("{:e}", x.abs());
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let sign = if x < 0.0 { "-" } else { "" };
    // JavaScript's n: the decimal point sits after the first n digits.
    let n = exponent + 1;
    let k = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k).unsigned_abs() as usize))
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(n.unsigned_abs() as usize);
        format!("{int}.{frac}")
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat(n.unsigned_abs() as usize))
    } else {
        let (first, rest) = digits.split_at(1);
        let point = if rest.is_empty() { "" } else { "." };
        let sign = if n - 1 < 0 { '-' } else { '+' };
        format!("{first}{point}{rest}e{sign}{}", (n - 1).unsigned_abs())
    };
    format!("{sign}{body}")
}

/// JavaScript's `JSON.stringify(value)` without indentation: numbers as JavaScript writes
/// them (`1.0` is `1`, `1e21` is `1e+21`).
#[cfg_attr(not(feature = "codemode"), allow(dead_code))]
pub(crate) fn js_json(value: &serde_json::Value) -> String {
    let mut out = String::new();
    write_js_json(value, &mut out);
    out
}

fn write_js_json(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match value {
        Value::Number(number) => match (number.as_i64(), number.as_u64(), number.as_f64()) {
            (Some(i), _, _) => out.push_str(&i.to_string()),
            (_, Some(u), _) => out.push_str(&u.to_string()),
            (_, _, Some(x)) if x.is_finite() => out.push_str(&js_number(x)),
            _ => out.push_str("null"),
        },
        Value::String(text) => out.push_str(&json_string(text)),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_js_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (index, (key, item)) in map.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&json_string(key));
                out.push(':');
                write_js_json(item, out);
            }
            out.push('}');
        }
        Value::Null | Value::Bool(_) => out.push_str(&value.to_string()),
    }
}

/// A string as a JSON string literal, escaped as `JSON.stringify` escapes it.
#[cfg_attr(not(feature = "codemode"), allow(dead_code))]
pub(crate) fn json_string(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

/// The length of `text` in UTF-16 code units, JavaScript's `length`.
#[cfg_attr(not(feature = "codemode"), allow(dead_code))]
pub(crate) fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

#[cfg(any(feature = "mcp", feature = "codemode"))]
/// `x.toFixed(1)` for a non-negative `x`: the exact value of the double, a tie rounded up.
pub(crate) fn js_to_fixed_1(x: f64) -> String {
    // Sixty digits hold the exact expansion of every double this is called with (sizes over
    // 1024 or 1048576); only the first two decimals decide.
    let exact = format!("{x:.60}");
    let (int, frac) = exact.split_once('.').unwrap_or((&exact, "0"));
    let digit = |i: usize| u128::from(frac.as_bytes().get(i).map_or(0, |d| d - b'0'));
    let Ok(int) = int.parse::<u128>() else {
        return exact;
    };
    let tenths = int * 10 + digit(0) + u128::from(digit(1) >= 5);
    format!("{}.{}", tenths / 10, tenths % 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_uses_js_whitespace() {
        assert_eq!(js_trim("\u{feff} a \u{3000}"), "a");
        assert_eq!(js_trim("\u{85}a\u{200b}"), "\u{85}a\u{200b}");
    }

    #[test]
    fn numbers_read_as_javascript_writes_them() {
        let cases = [
            (5.0, "5"),
            (0.25, "0.25"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (-0.0, "0"),
            (1.5e-7, "1.5e-7"),
            (0.000001, "0.000001"),
            (-123.456, "-123.456"),
            (f64::NAN, "NaN"),
        ];
        for (x, text) in cases {
            assert_eq!(js_number(x), text);
        }
        assert_eq!(
            js_json(&serde_json::json!({"a": [1.0, "\n", null]})),
            r#"{"a":[1,"\n",null]}"#
        );
    }
}
