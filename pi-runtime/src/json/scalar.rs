//! Number and literal tokens: what an unterminated one shows in the partial arguments and what
//! a finished one is, decided byte by byte so that a long token costs linear time.

use serde_json::Value;

/// Tokens up to this length are parsed from their text; longer ones from a bounded digest, so
/// that showing the preview of a huge number after every delta stays cheap.
const DIRECT_PARSE_LIMIT: usize = 1024;
/// Significant digits a digest keeps. Correct rounding of an `f64` never needs more than 767;
/// the digits after these only matter through a sticky non-zero digit.
const DIGEST_DIGITS: usize = 800;

/// Where a number token stands in the JSON number grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Number {
    Start,
    Minus,
    Zero,
    Integer,
    Dot,
    Fraction,
    Exponent,
    ExponentSign,
    ExponentDigits,
    Dead,
}

impl Number {
    #[inline]
    fn next(self, byte: u8) -> Number {
        use Number::*;
        match (self, byte) {
            (Start, b'-') => Minus,
            (Start | Minus, b'0') => Zero,
            (Start | Minus, b'1'..=b'9') | (Integer, b'0'..=b'9') => Integer,
            (Zero | Integer, b'.') => Dot,
            (Dot | Fraction, b'0'..=b'9') => Fraction,
            (Zero | Integer | Fraction, b'e' | b'E') => Exponent,
            (Exponent, b'+' | b'-') => ExponentSign,
            (Exponent | ExponentSign | ExponentDigits, b'0'..=b'9') => ExponentDigits,
            _ => Dead,
        }
    }

    fn is_complete(self) -> bool {
        matches!(
            self,
            Number::Zero | Number::Integer | Number::Fraction | Number::ExponentDigits
        )
    }

    /// A valid number followed by an exponent marker without digits: the marker is ignored.
    fn has_bare_exponent(self) -> bool {
        matches!(self, Number::Exponent | Number::ExponentSign)
    }
}

/// A bounded summary of a long number: `sign digits × 10^(scale + exponent)`.
#[derive(Debug, Default, Clone)]
struct Digest {
    negative: bool,
    digits: String,
    /// A non-zero digit was dropped after `digits`.
    sticky: bool,
    scale: i64,
    exponent_negative: bool,
    exponent: i64,
}

impl Digest {
    fn push(&mut self, state: Number, byte: u8) {
        match (state, byte) {
            (Number::Minus, _) => self.negative = true,
            (Number::Integer | Number::Fraction, b'0'..=b'9') => {
                let fraction = state == Number::Fraction;
                if self.digits.is_empty() && byte == b'0' {
                    // A leading zero only moves the point.
                    self.scale -= i64::from(fraction);
                } else if self.digits.len() < DIGEST_DIGITS {
                    self.digits.push(char::from(byte));
                    self.scale -= i64::from(fraction);
                } else {
                    self.sticky |= byte != b'0';
                    self.scale += i64::from(!fraction);
                }
            }
            (Number::ExponentSign, b'-') => self.exponent_negative = true,
            (Number::ExponentDigits, b'0'..=b'9') => {
                // Far beyond any f64 exponent; saturating keeps the text's meaning.
                self.exponent = (self.exponent * 10 + i64::from(byte - b'0')).min(1 << 40);
            }
            _ => {}
        }
    }

    /// A short number text with the same value, with or without the exponent part.
    fn text(&self, with_exponent: bool) -> String {
        let sign = if self.negative { "-" } else { "" };
        if self.digits.is_empty() {
            return format!("{sign}0e0");
        }
        let mut exponent = self.scale - i64::from(self.sticky);
        if with_exponent {
            exponent += if self.exponent_negative {
                -self.exponent
            } else {
                self.exponent
            };
        }
        let sticky = if self.sticky { "1" } else { "" };
        format!("{sign}{}{sticky}e{exponent}", self.digits)
    }
}

/// A number or literal as the partial arguments show it: what a `serde_json` value of these
/// kinds holds, without its allocation-capable enum, so the reader copies and compares it
/// freely.
#[derive(Debug, Clone, Copy)]
pub(super) enum Scalar {
    Null,
    Bool(bool),
    /// A non-negative integer (serde_json's `PosInt`).
    PosInt(u64),
    /// A negative integer (serde_json's `NegInt`).
    NegInt(i64),
    Float(f64),
}

impl PartialEq for Scalar {
    /// Equal when they serialize alike: a float compares by its bits, so that `-0.0` and
    /// `0.0` stay apart.
    fn eq(&self, other: &Scalar) -> bool {
        match (self, other) {
            (Scalar::Null, Scalar::Null) => true,
            (Scalar::Bool(a), Scalar::Bool(b)) => a == b,
            (Scalar::PosInt(a), Scalar::PosInt(b)) => a == b,
            (Scalar::NegInt(a), Scalar::NegInt(b)) => a == b,
            (Scalar::Float(a), Scalar::Float(b)) => a.to_bits() == b.to_bits(),
            _ => false,
        }
    }
}

impl Scalar {
    fn from_number(number: &serde_json::Number) -> Scalar {
        if let Some(value) = number.as_u64() {
            Scalar::PosInt(value)
        } else if let Some(value) = number.as_i64() {
            Scalar::NegInt(value)
        } else {
            number.as_f64().map_or(Scalar::Null, Scalar::Float)
        }
    }

    pub(super) fn to_value(self) -> Value {
        match self {
            Scalar::Null => Value::Null,
            Scalar::Bool(value) => Value::Bool(value),
            Scalar::PosInt(value) => Value::from(value),
            Scalar::NegInt(value) => Value::from(value),
            Scalar::Float(value) => {
                serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number)
            }
        }
    }
}

/// A number or literal token: the text between two delimiters outside strings.
#[derive(Debug)]
pub(super) struct Token {
    number: Number,
    /// The literal the token is a prefix of.
    literal: Option<Literal>,
    len: usize,
    /// The token's text, while it is a live number no longer than [`DIRECT_PARSE_LIMIT`]
    /// (ASCII).
    text: Vec<u8>,
    /// Where the exponent marker is in `text`.
    exponent_at: usize,
    /// The digest of a token longer than [`DIRECT_PARSE_LIMIT`] (boxed: few tokens need it).
    digest: Option<Box<Digest>>,
}

/// The JSON literals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Literal {
    True,
    False,
    Null,
}

impl Literal {
    fn starting_with(byte: u8) -> Option<Literal> {
        match byte {
            b't' => Some(Literal::True),
            b'f' => Some(Literal::False),
            b'n' => Some(Literal::Null),
            _ => None,
        }
    }

    fn text(self) -> &'static [u8] {
        match self {
            Literal::True => b"true",
            Literal::False => b"false",
            Literal::Null => b"null",
        }
    }

    fn value(self) -> Scalar {
        match self {
            Literal::True => Scalar::Bool(true),
            Literal::False => Scalar::Bool(false),
            Literal::Null => Scalar::Null,
        }
    }
}

impl Token {
    pub(super) fn new() -> Token {
        Token {
            number: Number::Start,
            literal: None,
            len: 0,
            text: Vec::new(),
            exponent_at: 0,
            digest: None,
        }
    }

    /// Read more of the token (bytes that are not delimiters).
    pub(super) fn push(&mut self, bytes: &[u8]) {
        if self.len == 0
            && let Some(&first) = bytes.first()
        {
            self.literal = Literal::starting_with(first);
        }
        if let Some(literal) = self.literal
            && literal.text().get(self.len..self.len + bytes.len()) != Some(bytes)
        {
            self.literal = None;
        }
        let keep_text = self.len + bytes.len() <= DIRECT_PARSE_LIMIT;
        if keep_text {
            self.push_text(bytes);
        } else {
            self.push_digest(bytes);
        }
        self.len += bytes.len();
    }

    /// Follow the grammar over `bytes` and keep the text they add to a live number.
    fn push_text(&mut self, bytes: &[u8]) {
        let mut state = self.number;
        let mut live = 0;
        for &byte in bytes {
            state = state.next(byte);
            if state == Number::Dead {
                break;
            }
            if matches!(byte, b'e' | b'E') {
                self.exponent_at = self.text.len() + live;
            }
            live += 1;
        }
        self.number = state;
        self.text.extend_from_slice(&bytes[..live]);
    }

    fn push_digest(&mut self, bytes: &[u8]) {
        let digest = self.digest.get_or_insert_default();
        if self.len <= DIRECT_PARSE_LIMIT {
            // The token outgrows its text: the digest takes over from what was read.
            let mut state = Number::Start;
            for &byte in &self.text {
                state = state.next(byte);
                digest.push(state, byte);
            }
            self.text.clear();
        }
        for &byte in bytes {
            if self.number == Number::Dead {
                break;
            }
            self.number = self.number.next(byte);
            digest.push(self.number, byte);
        }
    }

    /// The value of the finished token, or `None` for a word that is neither a JSON number
    /// nor a literal (it is dropped with its member).
    pub(super) fn complete(&self) -> Option<Scalar> {
        if let Some(literal) = self.literal
            && literal.text().len() == self.len
        {
            return Some(literal.value());
        }
        self.number.is_complete().then(|| self.number_value(true))
    }

    /// What the unterminated token shows: a literal it is a prefix of, a number, or a number
    /// followed by an exponent marker without digits.
    pub(super) fn preview(&self) -> Option<Scalar> {
        if let Some(literal) = self.literal {
            return Some(literal.value());
        }
        if self.number.is_complete() {
            Some(self.number_value(true))
        } else if self.number.has_bare_exponent() {
            Some(self.number_value(false))
        } else {
            None
        }
    }

    fn number_value(&self, with_exponent: bool) -> Scalar {
        // A short token is all in `text`; a long one has gone to the digest.
        match &self.digest {
            Some(digest) if self.len > DIRECT_PARSE_LIMIT => {
                number(digest.text(with_exponent).as_bytes())
            }
            _ => {
                let end = if with_exponent {
                    self.text.len()
                } else {
                    self.exponent_at.min(self.text.len())
                };
                number(&self.text[..end])
            }
        }
    }
}

/// The value of a number text that follows the JSON grammar, computed as the final parse
/// computes it, so that a preview and the final value never round differently. A number
/// beyond `f64` is `null`: what JavaScript's `JSON.stringify` makes of the `Infinity` pi
/// shows there.
fn number(text: &[u8]) -> Scalar {
    std::str::from_utf8(text)
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Number>(text).ok())
        .map_or(Scalar::Null, |number| Scalar::from_number(&number))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn token(text: &str) -> Token {
        let mut token = Token::new();
        for byte in text.as_bytes() {
            token.push(std::slice::from_ref(byte));
        }
        token
    }

    #[test]
    fn previews_follow_the_spec() {
        let cases = [
            ("t", Some(json!(true))),
            ("nul", Some(json!(null))),
            ("fals", Some(json!(false))),
            ("x", None),
            ("12", Some(json!(12))),
            ("-", None),
            ("1.", None),
            ("01", None),
            ("1e", Some(json!(1))),
            ("1.5E+", Some(json!(1.5))),
            ("-1.5e-3", Some(json!(-0.0015))),
            ("1e5x", None),
            ("truex", None),
        ];
        for (text, expected) in cases {
            assert_eq!(
                token(text).preview().map(Scalar::to_value),
                expected,
                "{text}"
            );
        }
    }

    #[test]
    fn finished_tokens_follow_the_spec() {
        let cases = [
            ("true", Some(json!(true))),
            ("tru", None),
            ("true1", None),
            ("nulll", None),
            ("TRUE", None),
            ("00", None),
            ("NaN", None),
            ("1e", None),
            ("-0.5", Some(json!(-0.5))),
            ("1E2", Some(json!(100.0))),
            ("18446744073709551615", Some(json!(18446744073709551615u64))),
            ("-9223372036854775808", Some(json!(i64::MIN))),
            ("1e400", Some(json!(null))),
        ];
        for (text, expected) in cases {
            assert_eq!(
                token(text).complete().map(Scalar::to_value),
                expected,
                "{text}"
            );
        }
    }

    #[test]
    fn pushing_whole_runs_equals_pushing_bytes() {
        for text in ["-12.5e+7", "nul", "1.", "1e5x", "falsey"] {
            let mut whole = Token::new();
            whole.push(text.as_bytes());
            let bytewise = token(text);
            assert_eq!(whole.preview(), bytewise.preview(), "{text}");
            assert_eq!(whole.complete(), bytewise.complete(), "{text}");
        }
    }

    #[test]
    fn integers_read_digit_by_digit_match_serde_json() {
        for text in [
            "7",
            "-7",
            "123456789012345678",
            "-123456789012345678",
            "1234567890123456789",
            "-9223372036854775808",
            "18446744073709551615",
            "18446744073709551616",
        ] {
            let expected = serde_json::from_str::<Value>(text).unwrap();
            assert_eq!(
                token(text).complete().map(Scalar::to_value),
                Some(expected.clone())
            );
            assert_eq!(token(text).preview().map(Scalar::to_value), Some(expected));
        }
    }

    #[test]
    fn long_numbers_match_serde_json() {
        let long_integer = format!("-{}", "9".repeat(3000));
        let long_fraction = format!("0.{}123e-5", "0".repeat(2000));
        let long_mantissa = format!("1.{}e300", "3".repeat(5000));
        let sticky = format!("1{}1e-2010", "0".repeat(2000));
        for text in [long_integer, long_fraction, long_mantissa, sticky] {
            let expected = serde_json::from_str::<Value>(&text).unwrap_or(Value::Null);
            assert_eq!(
                token(&text).complete().map(Scalar::to_value),
                Some(expected.clone())
            );
            assert_eq!(token(&text).preview().map(Scalar::to_value), Some(expected));
        }
        let bare = format!("{}e-", "7".repeat(1500));
        let mantissa = serde_json::from_str::<Value>(&bare[..1500]).unwrap_or(Value::Null);
        assert_eq!(token(&bare).preview().map(Scalar::to_value), Some(mantissa));
    }
}
