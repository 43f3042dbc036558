//! `tokenize`: the words tool search compares: Unicode NFC, identifier
//! boundaries, lower case, letters/marks/digits only, word segmentation, stop words and naive
//! singular forms.

use std::borrow::Cow;

use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfc_quick};

/// The words of `text` as tool search compares them, in order, repeats kept.
///
/// 1. Unicode NFC.
/// 2. Identifier boundaries: a space before an ASCII capital that follows an ASCII lower-case
///    letter or digit (`getHTTP` → `get HTTP`), and before the last capital of a run of two or
///    more followed by a lower-case letter (`HTTPResponse` → `HTTP Response`).
/// 3. Lower case; every run of characters that are not letters, marks or digits (Unicode
///    general categories L, M, N) becomes one space.
/// 4. Plain ASCII splits at spaces; other text is split as pi's `Intl.Segmenter` splits it
///    (ICU4C's word rules, then ICU's dictionaries for runs of Chinese, Japanese, Thai, Lao,
///    Khmer and Burmese; under the `icu-segmenter` feature, without it at spaces too),
///    keeping the word-like segments.
/// 5. Stop words (`a an and are as at be by for from in is it of on or that the this to with`)
///    are dropped, and words of ASCII letters and digits lose a plural ending: `-ies` → `-y`;
///    `-ches`, `-shes`, `-sses`, `-xes`, `-zes` lose `es`; another `-s` (not `-ss`) goes.
///
/// ```
/// use pi_runtime::tool_search::tokenize;
///
/// assert_eq!(tokenize("getHTTPResponse"), ["get", "http", "response"]);
/// assert_eq!(tokenize("Search the repositories' issues"), ["search", "repository", "issue"]);
/// assert_eq!(tokenize("OAuth2 v3"), ["o", "auth2", "v3"]);
/// assert_eq!(tokenize("Order from the cafe\u{301}"), ["order", "café"]);
/// # #[cfg(feature = "icu-segmenter")]
/// assert_eq!(tokenize("プルリクエストをマージします"), ["プルリクエスト", "を", "マージ", "し", "ます"]);
/// ```
pub fn tokenize(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    Tokenizer::default().each_word(text, |word| words.push(word.to_owned()));
    words
}

/// Tokenizes many texts with one set of buffers.
#[derive(Debug, Default)]
pub(crate) struct Tokenizer {
    /// A word with capitals, lower-cased.
    lower: String,
    /// A `-ies` word's singular form.
    stemmed: String,
    /// The text after identifier boundaries, lower case and category replacement (other text).
    folded: String,
}

impl Tokenizer {
    /// Call `emit` with each word of `text`, as [`tokenize`] returns them.
    pub(crate) fn each_word(&mut self, text: &str, mut emit: impl FnMut(&str)) {
        let text = nfc(text);
        if text.is_ascii() {
            self.ascii_words(&text, &mut emit);
        } else {
            self.other_words(&text, &mut emit);
        }
    }

    /// Plain ASCII in one pass: lower-case letters and digits between the boundaries, which
    /// gives the words step 4 splits at spaces.
    fn ascii_words(&mut self, text: &str, emit: &mut impl FnMut(&str)) {
        let bytes = text.as_bytes();
        // Words are slices of the text; only one with capitals or `-ies` is copied.
        let mut start = None;
        for (i, &byte) in bytes.iter().enumerate() {
            let boundary = !byte.is_ascii_alphanumeric()
                || starts_identifier_word(
                    i.checked_sub(1).map(|j| bytes[j]),
                    byte,
                    bytes.get(i + 1).copied(),
                );
            if boundary && let Some(start) = start.take() {
                self.finish_word(&text[start..i], emit);
            }
            if byte.is_ascii_alphanumeric() {
                start.get_or_insert(i);
            }
        }
        if let Some(start) = start {
            self.finish_word(&text[start..], emit);
        }
    }

    /// Emit a word lower-cased (ASCII capitals; other text is lower case already), unless it
    /// is empty or a stop word, in its singular form when it is ASCII letters and digits.
    fn finish_word(&mut self, word: &str, emit: &mut impl FnMut(&str)) {
        if word.bytes().any(|b| b.is_ascii_uppercase()) {
            self.lower.clear();
            self.lower.push_str(word);
            self.lower.make_ascii_lowercase();
            emit_word(&self.lower, &mut self.stemmed, emit);
        } else {
            emit_word(word, &mut self.stemmed, emit);
        }
    }

    /// Other text: the steps one after the other, on the whole text, since lower case (the
    /// final sigma) and word segmentation look at neighbours.
    fn other_words(&mut self, text: &str, emit: &mut impl FnMut(&str)) {
        let mut split = String::with_capacity(text.len() + 8);
        let mut chars = text.chars().peekable();
        let mut before = None;
        while let Some(c) = chars.next() {
            let after = chars.peek().copied();
            if c.is_ascii()
                && starts_identifier_word(
                    before,
                    c as u8,
                    after.filter(char::is_ascii).map(|a| a as u8),
                )
            {
                split.push(' ');
            }
            split.push(c);
            before = Some(c).filter(char::is_ascii).map(|c| c as u8);
        }
        let lower = split.to_lowercase();

        self.folded.clear();
        let mut in_gap = false;
        for c in lower.chars() {
            if is_word_char(c) {
                self.folded.push(c);
                in_gap = false;
            } else if !in_gap {
                self.folded.push(' ');
                in_gap = true;
            }
        }

        let folded = std::mem::take(&mut self.folded);
        if folded
            .bytes()
            .all(|b| b == b' ' || b.is_ascii_lowercase() || b.is_ascii_digit())
        {
            for piece in folded.split(' ') {
                self.finish_word(piece, emit);
            }
        } else {
            each_word_like(&folded, |piece| self.finish_word(piece, emit));
        }
        self.folded = folded;
    }
}

/// The text in NFC, borrowed when it is already (all of ASCII is).
fn nfc(text: &str) -> Cow<'_, str> {
    if text.is_ascii() || is_nfc_quick(text.chars()) == IsNormalized::Yes {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text.nfc().collect())
    }
}

/// Whether an identifier boundary comes before `c` (step 2). The two rules look at the
/// original neighbours: the first one inserts spaces only before the first capital of a run,
/// so it never changes what the second one sees.
fn starts_identifier_word(before: Option<u8>, c: u8, after: Option<u8>) -> bool {
    if !c.is_ascii_uppercase() {
        return false;
    }
    match before {
        // `getHTTP`, `v2Api`
        Some(b) if b.is_ascii_lowercase() || b.is_ascii_digit() => true,
        // `HTTPResponse`: before the `R`
        Some(b) if b.is_ascii_uppercase() => after.is_some_and(|a| a.is_ascii_lowercase()),
        _ => false,
    }
}

/// Letters, marks and digits (general categories L, M, N) stay; the rest separates words.
fn is_word_char(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric();
    }
    use GeneralCategory::*;
    matches!(
        get_general_category(c),
        UppercaseLetter
            | LowercaseLetter
            | TitlecaseLetter
            | ModifierLetter
            | OtherLetter
            | NonspacingMark
            | SpacingMark
            | EnclosingMark
            | DecimalNumber
            | LetterNumber
            | OtherNumber
    )
}

/// Drop an empty word or a stop word, emit the rest in singular form (`stemmed` holds a
/// `-ies` word's `-y` form).
fn emit_word(word: &str, stemmed: &mut String, emit: &mut impl FnMut(&str)) {
    if word.is_empty() || is_stop_word(word) {
        return;
    }
    if !word
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        emit(word);
        return;
    }
    match stem(word) {
        Stem::Slice(word) => emit(word),
        Stem::Y(head) => {
            stemmed.clear();
            stemmed.push_str(head);
            stemmed.push('y');
            emit(stemmed);
        }
    }
}

fn is_stop_word(word: &str) -> bool {
    matches!(
        word,
        "a" | "an"
            | "and"
            | "are"
            | "as"
            | "at"
            | "be"
            | "by"
            | "for"
            | "from"
            | "in"
            | "is"
            | "it"
            | "of"
            | "on"
            | "or"
            | "that"
            | "the"
            | "this"
            | "to"
            | "with"
    )
}

/// A singular form: a prefix of the word, or a prefix followed by `y`.
enum Stem<'w> {
    Slice(&'w str),
    Y(&'w str),
}

/// pi's naive singular form of an ASCII word: `issues` → `issue`, `searches` → `search`,
/// `repositories` → `repository`; `class`, `bus` (three letters) stay.
fn stem(word: &str) -> Stem<'_> {
    let len = word.len();
    if len > 4 && word.ends_with("ies") {
        Stem::Y(&word[..len - 3])
    } else if len > 4
        && ["ches", "shes", "sses", "xes", "zes"]
            .iter()
            .any(|ending| word.ends_with(ending))
    {
        Stem::Slice(&word[..len - 2])
    } else if len > 3 && word.ends_with('s') && !word.ends_with("ss") {
        Stem::Slice(&word[..len - 1])
    } else {
        Stem::Slice(word)
    }
}

/// Word segmentation as ICU4C does it (step 4), with its dictionaries.
#[cfg(feature = "icu-segmenter")]
use super::segment::each_word_like;

/// Without ICU, text that is not plain ASCII splits at spaces: the same words for scripts
/// written with spaces, one word for a run of Chinese or Japanese.
#[cfg(not(feature = "icu-segmenter"))]
fn each_word_like(text: &str, emit: impl FnMut(&str)) {
    text.split(' ').for_each(emit);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifier_boundaries() {
        assert_eq!(tokenize("getHTTPResponse"), ["get", "http", "response"]);
        assert_eq!(tokenize("GitHub"), ["git", "hub"]);
        assert_eq!(tokenize("OAuth2"), ["o", "auth2"]);
        assert_eq!(tokenize("ABCDeFGh"), ["abc", "de", "f", "gh"]);
        assert_eq!(tokenize("xBCd"), ["x", "b", "cd"]);
        assert_eq!(tokenize("v2Api"), ["v2", "api"]);
        assert_eq!(tokenize("thread_read"), ["thread", "read"]);
        assert_eq!(
            tokenize("mcp__github__create_issue"),
            ["mcp", "github", "create", "issue"]
        );
    }

    #[test]
    fn stop_words_and_punctuation() {
        assert!(tokenize("the and of to with").is_empty());
        assert!(tokenize("--- !!! ???").is_empty());
        assert!(tokenize("").is_empty());
        assert_eq!(
            tokenize("  Use owner/repo pairs. "),
            ["use", "owner", "repo", "pair"]
        );
    }

    #[test]
    fn stems() {
        assert_eq!(
            tokenize("classes boxes bus glass dishes"),
            ["class", "box", "bus", "glass", "dish"]
        );
        assert_eq!(
            tokenize("searches repositories issues"),
            ["search", "repository", "issue"]
        );
        assert_eq!(tokenize("axes ties buzzes"), ["axe", "tie", "buzz"]);
        // Words with other letters are not stemmed.
        assert_eq!(tokenize("cafés"), ["cafés"]);
    }

    #[test]
    fn other_text() {
        assert_eq!(tokenize("cafe\u{301} MENU"), ["café", "menu"]);
        // Lower case first, then categories: the Kelvin sign becomes an ASCII k.
        assert_eq!(tokenize("\u{212A}eys"), ["key"]);
        // Final sigma, as JavaScript's toLowerCase.
        assert_eq!(
            tokenize("\u{39f}\u{394}\u{39f}\u{3a3}"),
            ["\u{3bf}\u{3b4}\u{3bf}\u{3c2}"]
        );
        assert_eq!(
            tokenize("x² ½"),
            if cfg!(feature = "icu-segmenter") {
                vec!["x"]
            } else {
                vec!["x²", "½"]
            }
        );
    }

    #[cfg(feature = "icu-segmenter")]
    #[test]
    fn dictionary_segmentation() {
        assert_eq!(
            tokenize("ドキュメントを検索する"),
            ["ドキュメント", "を", "検索", "する"]
        );
        assert_eq!(
            tokenize("中文分词测试工具"),
            ["中文", "分词", "测试", "工具"]
        );
        assert_eq!(
            tokenize("ภาษาไทยง่ายนิดเดียว"),
            ["ภาษา", "ไทย", "ง่าย", "นิด", "เดียว"]
        );
        // Words ending in marks are word-like, as in ICU4C.
        assert_eq!(tokenize("नमस्ते दुनिया"), ["नमस्ते", "दुनिया"]);
        assert_eq!(tokenize("i\u{307}stanbul"), ["i\u{307}stanbul"]);
    }
}
