//! Word segmentation as pi's `Intl.Segmenter` (ICU4C) does it, for text of letters, marks,
//! digits and single spaces (what the tokenizer leaves).
//!
//! ICU4X's word segmenter follows UAX #29 where ICU4C has its own rules (`word.txt`):
//! Hangul syllables and kana/kanji join only their own kind (`API를` is two words), letters
//! of scripts written without spaces (Thai, Lao, Khmer, Burmese) join other letters and
//! digits (`ใช้API` is one word), and a Hangul syllable followed by marks is not a word. So
//! this module applies ICU4C's rules itself, on the character classes of `icu_properties`,
//! and splits by dictionary only where a dictionary decides: inside a run of
//! Chinese/Japanese text with ICU4C's own engine ([`cjk`]) over ICU's dictionary, inside a
//! run of Thai, Lao, Khmer or Burmese with ICU4X's dictionaries.
//!
//! Known difference: for Lao and Khmer, ICU4C's engines look ahead where ICU4X's dictionary
//! segmenter does not, so some runs split differently (`ໄຟລ໌` is one word in pi, `ໄຟ` `ລ໌`
//! here). Thai and Burmese matched ICU4C on every text tried.

use std::sync::LazyLock;

use icu_properties::props::{Ideographic, LineBreak, Script, WordBreak};
use icu_properties::{CodePointMapData, CodePointSetData};
use icu_segmenter::options::WordBreakInvariantOptions;
use icu_segmenter::{WordSegmenter, WordSegmenterBorrowed};

use super::cjk;

/// ICU4X's dictionary segmenter, for Thai, Lao, Khmer and Burmese by dictionary, as ICU4C
/// (`new_auto` would use LSTM models).
static DICTIONARY: LazyLock<WordSegmenterBorrowed<'static>> =
    LazyLock::new(|| WordSegmenter::new_dictionary(WordBreakInvariantOptions::default()));

/// A character's class in ICU4C's word rules, reduced to what the text can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Space,
    /// Marks (`Word_Break=Extend`): they belong to the character before them.
    Extend,
    /// `$ALetterPlus` and `$Hebrew_Letter`: letters, Thai and the like included, Hangul
    /// syllables, kana and kanji excluded.
    Letter,
    Numeric,
    /// `Word_Break=Katakana`.
    Katakana,
    /// Han and Hiragana (with Katakana, ICU4C's `$KanaKanji`).
    HanHiragana,
    Hangul,
    /// Ideographs that are not Han (Tangut, Nüshu, ...): words of one character.
    Ideographic,
    /// Anything else (`²`, `½`): segments of their own, not words.
    Other,
}

fn class(c: char) -> Class {
    if c == ' ' {
        return Class::Space;
    }
    if c.is_ascii_alphabetic() {
        return Class::Letter;
    }
    if c.is_ascii_digit() {
        return Class::Numeric;
    }
    let word_break = CodePointMapData::<WordBreak>::new().get(c);
    if word_break == WordBreak::Extend {
        return Class::Extend;
    }
    if ('\u{AC00}'..='\u{D7A3}').contains(&c) {
        return Class::Hangul;
    }
    if word_break == WordBreak::Katakana {
        return Class::Katakana;
    }
    let script = CodePointMapData::<Script>::new().get(c);
    if script == Script::Han || script == Script::Hiragana {
        return Class::HanHiragana;
    }
    if word_break == WordBreak::ALetter
        || word_break == WordBreak::HebrewLetter
        || CodePointMapData::<LineBreak>::new().get(c) == LineBreak::ComplexContext
    {
        return Class::Letter;
    }
    if word_break == WordBreak::Numeric {
        return Class::Numeric;
    }
    if CodePointSetData::new::<Ideographic>().contains(c) {
        return Class::Ideographic;
    }
    Class::Other
}

/// What a segment can still join, after its last character.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Joins {
    /// Letters and digits (rules 5, 8, 9, 10), also after marks.
    LettersAndDigits,
    /// Katakana (rule 13, also after marks) and, without marks, Han and Hiragana.
    Katakana {
        marked: bool,
    },
    /// Kana and kanji, until a mark comes (`$KanaKanji $KanaKanji` has no marks).
    KanaKanji,
    /// Hangul syllables, until a mark comes.
    Hangul,
    Nothing,
}

impl Joins {
    fn after(class: Class) -> Joins {
        match class {
            Class::Letter | Class::Numeric => Joins::LettersAndDigits,
            Class::Katakana => Joins::Katakana { marked: false },
            Class::HanHiragana => Joins::KanaKanji,
            Class::Hangul => Joins::Hangul,
            _ => Joins::Nothing,
        }
    }

    /// After a mark.
    fn marked(self) -> Joins {
        match self {
            Joins::LettersAndDigits => Joins::LettersAndDigits,
            Joins::Katakana { .. } => Joins::Katakana { marked: true },
            _ => Joins::Nothing,
        }
    }

    fn joins(self, next: Class) -> bool {
        matches!(
            (self, next),
            (Joins::LettersAndDigits, Class::Letter | Class::Numeric)
                | (Joins::Katakana { .. }, Class::Katakana)
                | (
                    Joins::Katakana { marked: false } | Joins::KanaKanji,
                    Class::HanHiragana
                )
                | (Joins::KanaKanji, Class::Katakana)
                | (Joins::Hangul, Class::Hangul)
        )
    }
}

/// Whether a segment is word-like (ICU4C's rule status is not 0): it starts with a letter,
/// digit, kana, kanji, ideograph or Hangul syllable, and is not a Hangul syllable with marks
/// (matched by the rule for marks, whose status is 0).
fn word_like(first: Class, marked: bool) -> bool {
    match first {
        Class::Letter
        | Class::Numeric
        | Class::Katakana
        | Class::HanHiragana
        | Class::Ideographic => true,
        Class::Hangul => !marked,
        Class::Space | Class::Extend | Class::Other => false,
    }
}

/// Call `emit` with each word-like segment of `text`, as `Intl.Segmenter` picks them.
pub(super) fn each_word_like<'a>(text: &'a str, mut emit: impl FnMut(&'a str)) {
    let mut chars = text.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        let first = class(c);
        let mut joins = Joins::after(first);
        let mut marked = false;
        let mut dictionary = dictionary_of(c).is_some();
        let mut end = start + c.len_utf8();
        while let Some(&(i, next)) = chars.peek() {
            let next_class = class(next);
            if next_class == Class::Extend {
                joins = joins.marked();
                marked = true;
            } else if joins.joins(next_class) {
                joins = Joins::after(next_class);
            } else {
                break;
            }
            dictionary |= dictionary_of(next).is_some();
            end = i + next.len_utf8();
            chars.next();
        }
        if !word_like(first, marked) {
            continue;
        }
        let segment = &text[start..end];
        if dictionary {
            split_by_dictionary(segment, &mut emit);
        } else {
            emit(segment);
        }
    }
}

/// A language with a dictionary: Chinese/Japanese, Thai, Lao, Khmer, Burmese.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dictionary {
    ChineseJapanese,
    Thai,
    Lao,
    Khmer,
    Burmese,
}

/// The dictionary that splits runs of this character (ICU4C's break engines' sets).
fn dictionary_of(c: char) -> Option<Dictionary> {
    if c.is_ascii() {
        return None;
    }
    // The CJK engine's set: Han, Hiragana, Katakana, the prolonged sound mark and the
    // half-width forms.
    if matches!(c, '\u{30FC}' | '\u{FF70}' | '\u{FF9E}' | '\u{FF9F}') {
        return Some(Dictionary::ChineseJapanese);
    }
    let script = CodePointMapData::<Script>::new().get(c);
    if script == Script::Han || script == Script::Hiragana || script == Script::Katakana {
        return Some(Dictionary::ChineseJapanese);
    }
    if CodePointMapData::<LineBreak>::new().get(c) != LineBreak::ComplexContext {
        return None;
    }
    match script {
        Script::Thai => Some(Dictionary::Thai),
        Script::Lao => Some(Dictionary::Lao),
        Script::Khmer => Some(Dictionary::Khmer),
        Script::Myanmar => Some(Dictionary::Burmese),
        _ => None,
    }
}

/// Split a word at the breaks a dictionary finds inside each run of one language's
/// characters; the runs' own ends are not breaks (`aภาษา` stays one word, as in ICU4C).
fn split_by_dictionary<'a>(segment: &'a str, emit: &mut impl FnMut(&'a str)) {
    let mut piece_start = 0;
    let mut chars = segment.char_indices().peekable();
    while let Some((run_start, c)) = chars.next() {
        let Some(language) = dictionary_of(c) else {
            continue;
        };
        let mut run_end = run_start + c.len_utf8();
        while let Some(&(i, next)) = chars.peek() {
            if dictionary_of(next) != Some(language) {
                break;
            }
            run_end = i + next.len_utf8();
            chars.next();
        }
        let run = &segment[run_start..run_end];
        let inner: Vec<usize> = if language == Dictionary::ChineseJapanese && cjk::available() {
            cjk::breaks(run)
        } else {
            DICTIONARY
                .segment_str(run)
                .filter(|&at| at != 0 && at != run.len())
                .collect()
        };
        for at in inner {
            let at = run_start + at;
            emit(&segment[piece_start..at]);
            piece_start = at;
        }
    }
    emit(&segment[piece_start..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<&str> {
        let mut words = Vec::new();
        each_word_like(text, |word| words.push(word));
        words
    }

    /// Each expectation is what `Intl.Segmenter` (Node 20, ICU 78) answers.
    #[test]
    fn as_icu4c() {
        assert_eq!(
            words("ドキュメントを検索する"),
            ["ドキュメント", "を", "検索", "する"]
        );
        assert_eq!(words("中文分词测试工具"), ["中文", "分词", "测试", "工具"]);
        assert_eq!(
            words("ภาษาไทยง่ายนิดเดียว"),
            ["ภาษา", "ไทย", "ง่าย", "นิด", "เดียว"]
        );
        assert_eq!(words("api를사용합니다"), ["api", "를사용합니다"]);
        assert_eq!(words("ใช้apiง่าย"), ["ใช้apiง่าย"]);
        assert_eq!(words("aภาษา1ภาษา"), ["aภาษา1ภาษา"]);
        assert_eq!(words("aภาษาaภาษาภาษา"), ["aภาษาaภาษา", "ภาษา"]);
        assert_eq!(words("नमस्ते दुनिया"), ["नमस्ते", "दुनिया"]);
        assert_eq!(words("cafe\u{301} menu"), ["cafe\u{301}", "menu"]);
        assert_eq!(words("x² ½ ⅻ"), ["x", "ⅻ"]);
        assert_eq!(words("\u{301}abc"), ["abc"]);
        assert_eq!(words("한\u{301}한"), ["한"]);
        assert_eq!(words("検\u{301}検"), ["検\u{301}", "検"]);
        assert_eq!(words("ⅻ月"), ["ⅻ", "月"]);
        assert_eq!(words("ｶﾞｲﾄﾞ"), ["ｶﾞｲﾄﾞ"]);
        assert_eq!(words("す\u{94d}"), ["す\u{94d}"]);
    }
}
