//! ICU4C's break engine for Chinese and Japanese (`CjkBreakEngine` in `dictbe.cpp`): the
//! cheapest split of a run by the word costs of ICU's `cjdict`, with its rule for runs of
//! katakana. ICU4X ships the same dictionary, costs included, but its own segmenter takes
//! the longest word at each step (`しま` `す` where ICU4C, and so pi, finds `し` `ます`).

use std::sync::LazyLock;

use icu_collections::char16trie::Char16Trie;
use icu_provider::prelude::*;
use icu_segmenter::provider::{Baked, DictionaryBreakData, SegmenterDictionaryAutoV2};
use unicode_normalization::char::{canonical_combining_class, decompose_compatible};
use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfkc_quick};

/// The cost of a character the dictionary has no one-character word for.
const UNKNOWN_COST: u32 = 255;
/// The longest dictionary word tried, in UTF-16 units.
const MAX_WORD_UNITS: usize = 20;
/// Runs of katakana this long or longer are not taken as one word.
const MAX_KATAKANA_RUN: usize = 20;

/// ICU's `cjdict` as ICU4X's compiled data holds it; `None` if the data were missing.
static CJDICT: LazyLock<Option<&'static Char16Trie<'static>>> = LazyLock::new(|| {
    let mut metadata = DataRequestMetadata::default();
    metadata.silent = true;
    metadata.attributes_prefix_match = true;
    let response = DataProvider::<SegmenterDictionaryAutoV2>::load(
        &Baked,
        DataRequest {
            id: DataIdentifierBorrowed::for_marker_attributes(
                DataMarkerAttributes::from_str_or_panic("cjdict"),
            ),
            metadata,
        },
    )
    .ok()?;
    match response.payload.get_static()? {
        DictionaryBreakData::Char16Trie(trie) => Some(trie),
        DictionaryBreakData::ZeroTrie { .. } => None,
    }
});

/// Whether ICU's `cjdict` is available (it is compiled in; `false` only if ICU4X's data
/// changed shape).
pub(super) fn available() -> bool {
    CJDICT.is_some()
}

/// The breaks inside a run of Chinese/Japanese characters (byte offsets into `run`,
/// ascending, neither 0 nor `run.len()`), as ICU4C finds them.
pub(super) fn breaks(run: &str) -> Vec<usize> {
    let Some(dictionary) = *CJDICT else {
        return Vec::new();
    };
    // The engine reads the run in NFKC (half-width katakana become full-width), and maps each
    // character it reads back to the start of its normalization chunk.
    let (text, offsets) = normalized(run);
    let n = text.len();

    // best[i]: the cost of the cheapest split of the first i characters; prev[i]: where its
    // last word starts.
    let mut best = vec![u32::MAX; n + 1];
    let mut prev = vec![usize::MAX; n + 1];
    best[0] = 0;
    let mut words: Vec<(usize, u32)> = Vec::new();
    let mut previous_katakana = false;
    for i in 0..n {
        if best[i] == u32::MAX {
            continue;
        }
        words.clear();
        let mut cursor = dictionary.cursor();
        let mut units = 0;
        for (length, &c) in text[i..].iter().enumerate() {
            cursor.step(c);
            units += c.len_utf16();
            if let Some(cost) = cursor.value() {
                words.push((length + 1, u32::try_from(cost).unwrap_or(u32::MAX)));
            }
            if cursor.is_empty() || units >= MAX_WORD_UNITS {
                break;
            }
        }
        if words.first().is_none_or(|&(length, _)| length != 1) {
            words.push((1, UNKNOWN_COST));
        }
        for &(length, cost) in &words {
            let cost = best[i].saturating_add(cost);
            if cost < best[i + length] {
                best[i + length] = cost;
                prev[i + length] = i;
            }
        }

        // A run of katakana is a word candidate of its own, at a cost by its length.
        let katakana = is_katakana(text[i]);
        if !previous_katakana && katakana {
            let run = 1 + text[i + 1..]
                .iter()
                .take(MAX_KATAKANA_RUN - 1)
                .take_while(|&&c| is_katakana(c))
                .count();
            if run < MAX_KATAKANA_RUN {
                let cost = best[i].saturating_add(katakana_cost(run));
                if cost < best[i + run] {
                    best[i + run] = cost;
                    prev[i + run] = i;
                }
            }
        }
        previous_katakana = katakana;
    }

    let mut boundaries = Vec::new();
    if best[n] != u32::MAX {
        let mut i = n;
        while i > 0 && i != usize::MAX {
            boundaries.push(i);
            i = prev[i];
        }
    }
    let mut breaks: Vec<usize> = Vec::new();
    for &boundary in boundaries.iter().rev() {
        let offset = offsets[boundary];
        // Two boundaries inside one normalization chunk map to one place: keep the first.
        if offset != 0 && offset != run.len() && breaks.last() != Some(&offset) {
            breaks.push(offset);
        }
    }
    breaks
}

/// The run in NFKC, as characters, and per character (and for the end) the byte offset in
/// `run` of the normalization chunk it comes from.
fn normalized(run: &str) -> (Vec<char>, Vec<usize>) {
    if is_nfkc_quick(run.chars()) == IsNormalized::Yes {
        let (offsets, text): (Vec<usize>, Vec<char>) = run.char_indices().unzip();
        let mut offsets = offsets;
        offsets.push(run.len());
        return (text, offsets);
    }
    let mut text = Vec::new();
    let mut offsets = Vec::new();
    let mut chars = run.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        let mut end = start + c.len_utf8();
        while let Some(&(i, next)) = chars.peek() {
            if has_boundary_before(next) {
                break;
            }
            end = i + next.len_utf8();
            chars.next();
        }
        for c in run[start..end].nfkc() {
            text.push(c);
            offsets.push(start);
        }
    }
    offsets.push(run.len());
    (text, offsets)
}

/// Whether NFKC never joins `c` with what comes before it: its decomposition starts with a
/// starter (a character of combining class 0). The half-width voiced sound marks are not:
/// they decompose to combining marks.
fn has_boundary_before(c: char) -> bool {
    let mut first = None;
    decompose_compatible(c, |d| {
        first.get_or_insert(d);
    });
    first.is_none_or(|d| canonical_combining_class(d) == 0)
}

/// ICU4C's `isKatakana`: the Katakana block but the middle dot, and the half-width forms.
fn is_katakana(c: char) -> bool {
    matches!(c, '\u{30A1}'..='\u{30FE}' if c != '\u{30FB}') || matches!(c, '\u{FF66}'..='\u{FF9F}')
}

/// ICU4C's costs of a katakana run by its length (from the lengths of katakana words in
/// the dictionary).
fn katakana_cost(length: usize) -> u32 {
    const COSTS: [u32; 9] = [8192, 984, 408, 240, 204, 252, 300, 372, 480];
    COSTS.get(length).copied().unwrap_or(8192)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(run: &str) -> Vec<&str> {
        let mut pieces = Vec::new();
        let mut start = 0;
        for at in breaks(run) {
            pieces.push(&run[start..at]);
            start = at;
        }
        pieces.push(&run[start..]);
        pieces
    }

    /// Each expectation is what `Intl.Segmenter` (Node 20, ICU 78) answers.
    #[test]
    fn as_icu4c() {
        assert!(available());
        assert_eq!(
            split("プルリクエストをマージします"),
            ["プルリクエスト", "を", "マージ", "し", "ます"]
        );
        assert_eq!(
            split("リポジトリのイシューを検索する"),
            ["リ", "ポジ", "トリ", "の", "イシュー", "を", "検索", "する"]
        );
        assert_eq!(
            split("将文本翻译成目标语言"),
            ["将", "文本", "翻译", "成", "目标", "语言"]
        );
        assert_eq!(split("すすす"), ["す", "すす"]);
        assert_eq!(split("ードキュメント"), ["ー", "ドキュメント"]);
        assert_eq!(split("ドキュメントｱｲｳ"), ["ドキュメント", "ｱ", "ｲ", "ｳ"]);
        assert_eq!(split("ｶﾞｲﾄﾞ"), ["ｶﾞｲﾄﾞ"]);
    }
}
