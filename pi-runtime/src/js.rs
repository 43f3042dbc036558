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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_uses_js_whitespace() {
        assert_eq!(js_trim("\u{feff} a \u{3000}"), "a");
        assert_eq!(js_trim("\u{85}a\u{200b}"), "\u{85}a\u{200b}");
    }
}
