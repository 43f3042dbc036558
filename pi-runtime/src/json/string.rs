//! Decoding the inside of a string literal that arrives in pieces.
//!
//! An escape cut by a delta is held back until it is complete. An escaped high surrogate is
//! held back until the next escape shows whether its low half follows: a pair decodes to
//! its character, a lone half to U+FFFD (Rust strings cannot hold it). An invalid escape keeps
//! its backslash and the next character is read normally, as `repairJson` does.

/// Four hex digits of a `\u` escape, as read so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Hex {
    raw: [u8; 4],
    len: u8,
}

impl Hex {
    /// Add one digit; returns the code unit once all four are read.
    fn push(&mut self, digit: u8) -> Option<u16> {
        self.raw[usize::from(self.len)] = digit;
        self.len += 1;
        // Only hex digits get here (`is_ascii_hexdigit` was checked).
        (self.len == 4).then(|| hex_code(self.raw).unwrap_or(0))
    }

    /// `\u` and the digits read so far, kept as text when a non-digit follows.
    fn literal(&self, out: &mut String) {
        out.push_str("\\u");
        for &digit in &self.raw[..usize::from(self.len)] {
            out.push(char::from(digit));
        }
    }
}

/// Where the decoder stands inside an escape.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum Escape {
    /// Plain text.
    #[default]
    None,
    /// After `\`.
    Backslash,
    /// After `\u` and some digits.
    Unicode(Hex),
    /// After an escaped high surrogate.
    High(u16),
    /// After an escaped high surrogate and `\`.
    HighBackslash(u16),
    /// After an escaped high surrogate, `\u` and some digits.
    HighUnicode(u16, Hex),
}

/// What [`Escape::read`] stopped at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Read {
    /// The text ended inside the string.
    Open,
    /// The closing quote; the index after it.
    Closed(usize),
}

impl Escape {
    /// Decode string content from `text[at..]` into `out` until the closing quote or the end
    /// of the text.
    pub(super) fn read(&mut self, text: &str, mut at: usize, out: &mut String) -> Read {
        let bytes = text.as_bytes();
        loop {
            while *self != Escape::None && at < bytes.len() {
                if self.step(bytes[at], out) {
                    at += 1;
                }
            }
            if at >= bytes.len() {
                return Read::Open;
            }
            // Every boundary below is an ASCII byte, so the slices are whole characters.
            let Some(offset) = find_special(&bytes[at..]) else {
                push_str(out, text.get(at..).unwrap_or_default());
                return Read::Open;
            };
            let special = at + offset;
            push_str(out, text.get(at..special).unwrap_or_default());
            if bytes[special] == b'"' {
                return Read::Closed(special + 1);
            }
            *self = Escape::Backslash;
            at = special + 1;
        }
    }

    /// Continue an escape with `byte`; `false` when `byte` is not part of it and must be read
    /// again as plain text (the escape has been resolved into `out` by then).
    fn step(&mut self, byte: u8, out: &mut String) -> bool {
        match *self {
            Escape::None => false,
            Escape::Backslash => {
                *self = Escape::None;
                if let Some(decoded) = simple_escape(byte) {
                    out.push(decoded);
                    return true;
                }
                if byte == b'u' {
                    *self = Escape::Unicode(Hex::default());
                    return true;
                }
                out.push('\\');
                false
            }
            Escape::Unicode(mut hex) => {
                if !byte.is_ascii_hexdigit() {
                    hex.literal(out);
                    *self = Escape::None;
                    return false;
                }
                *self = match hex.push(byte) {
                    Some(code) => Escape::unit(code, out),
                    None => Escape::Unicode(hex),
                };
                true
            }
            Escape::High(high) => {
                if byte == b'\\' {
                    *self = Escape::HighBackslash(high);
                    return true;
                }
                out.push(char::REPLACEMENT_CHARACTER);
                *self = Escape::None;
                false
            }
            Escape::HighBackslash(high) => {
                if byte == b'u' {
                    *self = Escape::HighUnicode(high, Hex::default());
                    return true;
                }
                out.push(char::REPLACEMENT_CHARACTER);
                *self = Escape::Backslash;
                false
            }
            Escape::HighUnicode(high, mut hex) => {
                if !byte.is_ascii_hexdigit() {
                    out.push(char::REPLACEMENT_CHARACTER);
                    hex.literal(out);
                    *self = Escape::None;
                    return false;
                }
                *self = match hex.push(byte) {
                    None => Escape::HighUnicode(high, hex),
                    Some(code) => Escape::after_high(high, code, out),
                };
                true
            }
        }
    }

    /// The state after a complete `\uXXXX` that follows an escaped high surrogate: the pair's
    /// character, or a replacement for the lone high half and then the new unit.
    fn after_high(high: u16, code: u16, out: &mut String) -> Escape {
        match code {
            0xDC00..=0xDFFF => {
                let pair =
                    0x10000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(code) - 0xDC00);
                out.push(char::from_u32(pair).unwrap_or(char::REPLACEMENT_CHARACTER));
                Escape::None
            }
            _ => {
                out.push(char::REPLACEMENT_CHARACTER);
                Escape::unit(code, out)
            }
        }
    }

    /// The state after a complete `\uXXXX` that does not finish a pair.
    fn unit(code: u16, out: &mut String) -> Escape {
        match code {
            0xD800..=0xDBFF => Escape::High(code),
            _ => {
                out.push(char::from_u32(u32::from(code)).unwrap_or(char::REPLACEMENT_CHARACTER));
                Escape::None
            }
        }
    }
}

/// Append `text` to `out`. A one-byte text, common in deltas and between escapes, is pushed
/// without a call to `memcpy` (measured: 10% of the `partial_json` bench).
pub(super) fn push_str(out: &mut String, text: &str) {
    match text.as_bytes() {
        // A one-byte string is one ASCII character (the guard lets `push` skip encoding).
        &[byte] if byte.is_ascii() => out.push(char::from(byte)),
        _ => out.push_str(text),
    }
}

/// The first `"` or `\\` of `bytes`: where plain text stops. A plain scan: deltas are a few
/// bytes long, where `memchr` costs more than it saves (measured: 8% slower on the
/// `partial_json` bench) and a word-at-a-time search gains nothing.
fn find_special(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&byte| byte == b'"' || byte == b'\\')
}

/// The code unit four hex digits spell, if they are hex digits.
fn hex_code(digits: [u8; 4]) -> Option<u16> {
    digits.iter().try_fold(0u16, |code, &digit| {
        let value = char::from(digit).to_digit(16)?;
        Some(code << 4 | value as u16)
    })
}

fn simple_escape(byte: u8) -> Option<char> {
    Some(match byte {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decode `pieces` of one string body; returns the text shown after each piece.
    fn decode(pieces: &[&str]) -> Vec<String> {
        let mut escape = Escape::None;
        let mut out = String::new();
        pieces
            .iter()
            .map(|piece| {
                escape.read(piece, 0, &mut out);
                out.clone()
            })
            .collect()
    }

    #[test]
    fn escapes_are_held_back_until_complete() {
        assert_eq!(
            decode(&["a\\", "nb\\u00", "e9", "\\u0041"]),
            ["a", "a\nb", "a\nbé", "a\nbéA"]
        );
    }

    #[test]
    fn invalid_escapes_stay_literal() {
        assert_eq!(decode(&["A\\H"]), ["A\\H"]);
        assert_eq!(decode(&["A\\u12G4"]), ["A\\u12G4"]);
        assert_eq!(decode(&["\\u12", "\\n"]), ["", "\\u12\n"]);
    }

    #[test]
    fn surrogate_pairs_join_across_pieces() {
        assert_eq!(decode(&["\\ud83d", "\\ude00!"]), ["", "😀!"]);
        assert_eq!(decode(&["\\ud83d\\", "u", "de0", "0"]), ["", "", "", "😀"]);
    }

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        assert_eq!(decode(&["\\ude00x"]), ["\u{fffd}x"]);
        assert_eq!(decode(&["\\ud83dx"]), ["\u{fffd}x"]);
        assert_eq!(decode(&["\\ud83d\\n"]), ["\u{fffd}\n"]);
        assert_eq!(decode(&["\\ud83d\\u0041"]), ["\u{fffd}A"]);
        assert_eq!(decode(&["\\ud83d\\ud83d\\ude00"]), ["\u{fffd}😀"]);
        assert_eq!(decode(&["\\ud83d\\uZ"]), ["\u{fffd}\\uZ"]);
    }

    #[test]
    fn the_closing_quote_ends_the_string() {
        let mut escape = Escape::None;
        let mut out = String::new();
        assert_eq!(escape.read(r#"a\"b"c"#, 0, &mut out), Read::Closed(5));
        assert_eq!(out, "a\"b");
        let mut escape = Escape::Unicode(Hex::default());
        let mut out = String::new();
        assert_eq!(escape.read(r#"0"x"#, 0, &mut out), Read::Closed(2));
        assert_eq!(out, "\\u0");
    }
}
