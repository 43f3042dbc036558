//! JavaScript's `Number(string)` grammar (which pi's coercion uses) and the JSON numbers it
//! produces.

use serde_json::{Number, Value};

use crate::js::js_trim;

/// The largest integer JavaScript holds exactly (2^53 − 1), the bound of the BigInt fallback.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// `Number(text)` in JavaScript: `None` where JS gives `NaN`. Infinities are returned as
/// such; callers that need a finite number check for it.
pub(crate) fn js_number(text: &str) -> Option<f64> {
    let text = js_trim(text);
    if text.is_empty() {
        return Some(0.0);
    }
    let bytes = text.as_bytes();
    if bytes.len() > 2 && bytes[0] == b'0' {
        let radix = match bytes[1] {
            b'x' | b'X' => 16,
            b'o' | b'O' => 8,
            b'b' | b'B' => 2,
            _ => 0,
        };
        if radix != 0 {
            return parse_radix(&text[2..], radix);
        }
    }
    let (negative, unsigned) = match bytes[0] {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let magnitude = if unsigned == "Infinity" {
        f64::INFINITY
    } else if is_decimal_literal(unsigned) {
        // The grammar was checked above, so Rust's parser (which would also accept `inf`,
        // `nan`, ...) only sees JS decimal literals here.
        unsigned.parse::<f64>().ok()?
    } else {
        return None;
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// `digits [. digits] [e[+-]digits]` or `. digits [e...]`, with at least one mantissa digit.
fn is_decimal_literal(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    let int_digits = count_digits(&bytes[i..]);
    i += int_digits;
    let mut frac_digits = 0;
    if bytes.get(i) == Some(&b'.') {
        i += 1;
        frac_digits = count_digits(&bytes[i..]);
        i += frac_digits;
    }
    if int_digits + frac_digits == 0 {
        return false;
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(bytes.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exp_digits = count_digits(&bytes[i..]);
        if exp_digits == 0 {
            return false;
        }
        i += exp_digits;
    }
    i == bytes.len()
}

fn count_digits(bytes: &[u8]) -> usize {
    bytes.iter().take_while(|b| b.is_ascii_digit()).count()
}

fn parse_radix(digits: &str, radix: u32) -> Option<f64> {
    if digits.is_empty() {
        return None;
    }
    digits.chars().try_fold(0.0_f64, |acc, c| {
        c.to_digit(radix)
            .map(|d| acc * f64::from(radix) + f64::from(d))
    })
}

/// The finite number JS reads from `text`, as a JSON number. A plain integer literal that fits
/// 64 bits keeps its exact value (unlike JavaScript, no rounding above 2^53).
pub(crate) fn finite_number(text: &str) -> Option<Value> {
    let trimmed = js_trim(text);
    let digits = trimmed.strip_prefix(['+', '-']).unwrap_or(trimmed);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        let exact = if trimmed.starts_with('-') {
            trimmed.parse::<i64>().ok().map(Number::from)
        } else {
            digits.parse::<u64>().ok().map(Number::from)
        };
        if let Some(number) = exact {
            // `-0` is the integer 0 in JSON output, as `JSON.stringify(-0)` writes it.
            return Some(Value::Number(number));
        }
    }
    js_number(text).and_then(number_value)
}

/// The BigInt-literal fallback of the `number` conversion: `-?(0|[1-9][0-9]*)n` within
/// ±(2^53 − 1).
pub(crate) fn bigint_literal(text: &str) -> Option<Value> {
    let body = text.strip_suffix('n')?;
    let (negative, digits) = match body.strip_prefix('-') {
        Some(digits) => (true, digits),
        None => (false, body),
    };
    let canonical = digits == "0" || (!digits.starts_with('0') && !digits.is_empty());
    if !canonical || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let magnitude = digits
        .parse::<u64>()
        .ok()
        .filter(|&m| m <= MAX_SAFE_INTEGER)?;
    let magnitude = i64::try_from(magnitude).ok()?;
    Some(Value::from(if negative { -magnitude } else { magnitude }))
}

/// A finite `f64` as a JSON number: integral values become JSON integers (so `42.0` prints
/// as `42`, like JS), others stay floats. `None` for NaN and infinities.
pub(crate) fn number_value(x: f64) -> Option<Value> {
    if !x.is_finite() {
        return None;
    }
    // 2^63 is exactly representable; integral values below it convert without loss.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if x.fract() == 0.0 && x.abs() < LIMIT {
        #[allow(
            clippy::cast_possible_truncation,
            reason = "integral and in range, checked above"
        )]
        return Some(Value::from(x as i64));
    }
    Number::from_f64(x).map(Value::Number)
}

/// `value` truncated toward zero, or `None` when it already is an integer.
pub(crate) fn truncate(number: &Number) -> Option<Value> {
    if number.is_i64() || number.is_u64() {
        return None;
    }
    let x = number.as_f64()?;
    if x.fract() == 0.0 {
        // An integral float (`5.0`, `1e21`): JS cannot tell it from the integer, so a
        // conversion would not change it.
        return None;
    }
    number_value(x.trunc())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verified_number_grammar() {
        let cases: &[(&str, Option<f64>)] = &[
            (" 7 ", Some(7.0)),
            ("\n7\t", Some(7.0)),
            ("\u{a0}7", Some(7.0)),
            ("\u{feff}7", Some(7.0)),
            ("+5", Some(5.0)),
            (".5", Some(0.5)),
            ("5.", Some(5.0)),
            ("-.5", Some(-0.5)),
            ("05", Some(5.0)),
            ("0x1f", Some(31.0)),
            ("0b101", Some(5.0)),
            ("0o17", Some(15.0)),
            ("1E3", Some(1000.0)),
            ("", Some(0.0)),
            ("   ", Some(0.0)),
            ("-0x10", None),
            ("1_000", None),
            ("12n", None),
            ("1e", None),
            ("--1", None),
            ("- 5", None),
            ("1,000", None),
            ("NaN", None),
            ("\u{660}", None),
            ("\u{85}7", None),
            (".", None),
            ("0x", None),
            ("inf", None),
        ];
        for (text, expected) in cases {
            assert_eq!(js_number(text), *expected, "Number({text:?})");
        }
        assert_eq!(js_number("Infinity"), Some(f64::INFINITY));
        assert_eq!(js_number("-Infinity"), Some(f64::NEG_INFINITY));
        assert_eq!(finite_number("1e400"), None);
        assert_eq!(finite_number("Infinity"), None);
    }

    #[test]
    fn integers_stay_exact() {
        assert_eq!(
            finite_number("9007199254740993"),
            Some(Value::from(9_007_199_254_740_993_u64))
        );
        assert_eq!(finite_number("-0"), Some(Value::from(0)));
        assert_eq!(finite_number("42.5"), Some(Value::from(42.5)));
        assert_eq!(finite_number("1e3"), Some(Value::from(1000)));
    }

    #[test]
    fn bigint_fallback() {
        assert_eq!(bigint_literal("12n"), Some(Value::from(12)));
        assert_eq!(bigint_literal("-12n"), Some(Value::from(-12)));
        assert_eq!(bigint_literal("0n"), Some(Value::from(0)));
        assert_eq!(bigint_literal("012n"), None);
        assert_eq!(bigint_literal("n"), None);
        assert_eq!(bigint_literal("9007199254740992n"), None);
        assert_eq!(
            bigint_literal("9007199254740991n"),
            Some(Value::from(9_007_199_254_740_991_i64))
        );
    }

    #[test]
    fn truncation_toward_zero() {
        let t = |x: f64| truncate(&Number::from_f64(x).unwrap());
        assert_eq!(t(42.5), Some(Value::from(42)));
        assert_eq!(t(-3.7), Some(Value::from(-3)));
        assert_eq!(t(1e-7), Some(Value::from(0)));
        assert_eq!(t(-0.5), Some(Value::from(0)));
        assert_eq!(t(5.0), None);
        assert_eq!(truncate(&Number::from(5)), None);
    }
}
