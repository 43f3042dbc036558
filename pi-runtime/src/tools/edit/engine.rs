//! The matching engine of `edit`: find every `oldText` in the original
//! content (exactly, else after fuzzy normalisation), reject empty, missing, ambiguous,
//! overlapping and no-op edits, and splice the replacements into the original bytes.

use std::borrow::Cow;
use std::cell::OnceCell;

use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfkc_quick};

use crate::js::is_js_space;

/// One targeted replacement as the model sent it.
///
/// Its field docs are the descriptions the model reads (pi's); the item itself has none,
/// as in pi's schema.
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
#[schemars(title = "", description = "")]
pub struct Replacement {
    /// Exact text for one targeted replacement. It must be unique in the original file and must not overlap with any other edits[].oldText in the same call.
    pub old_text: String,
    /// Replacement text for this targeted edit.
    pub new_text: String,
}

/// A replacement located in a text: `len` bytes at `at` become `new_text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Splice {
    pub(crate) at: usize,
    pub(crate) len: usize,
    pub(crate) new_text: String,
}

/// The outcome of matching: the LF-normalised content after the edits, and the splices
/// (sorted, disjoint) that turn the content into it.
#[derive(Debug)]
pub(crate) struct Applied {
    pub(crate) after: String,
    pub(crate) splices: Vec<Splice>,
}

/// `\r\n` and lone `\r` become `\n`. Borrowed when there is none: a file is edited with as
/// few copies of it as can be.
pub(crate) fn normalize_to_lf(text: &str) -> Cow<'_, str> {
    if text.contains('\r') {
        Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(text)
    }
}

/// The text fuzzy matching compares: NFKC, no trailing whitespace on any line, and
/// typographic quotes, dashes and spaces spelled in ASCII. Borrowed when `text` is that
/// already, as most files are: uniqueness is always judged in this text, and building it
/// char by char is what made the edit of a 50 MB file take seconds.
pub(crate) fn normalize_for_fuzzy_match(text: &str) -> Cow<'_, str> {
    if is_fuzzy_normal(text) {
        return Cow::Borrowed(text);
    }
    let nfkc: String = text.nfkc().collect();
    let mut out = String::with_capacity(nfkc.len());
    for (i, line) in nfkc.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.extend(
            line.trim_end_matches(is_js_space)
                .chars()
                .map(fold_typography),
        );
    }
    Cow::Owned(out)
}

/// Whether [`normalize_for_fuzzy_match`] would leave `text` as it is (NFKC's quick check may
/// answer "maybe", which counts as no). ASCII needs neither NFKC nor the typography folds.
fn is_fuzzy_normal(text: &str) -> bool {
    let no_trailing_space = || text.split('\n').all(|line| !line.ends_with(is_js_space));
    if text.is_ascii() {
        return no_trailing_space();
    }
    is_nfkc_quick(text.chars()) == IsNormalized::Yes
        && text.chars().all(|c| fold_typography(c) == c)
        && no_trailing_space()
}

fn fold_typography(c: char) -> char {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    }
}

/// Match `edits` against `content` (LF-normalised, BOM stripped) and apply them.
///
/// Every edit is matched against the original content, never against an earlier edit's
/// result. If any edit only matches fuzzily, all of them are matched in the fuzzy-normalised
/// text, and each replaced range is widened to whole lines taken from that text, so lines no
/// edit touches keep their original bytes.
///
/// # Errors
/// The model-facing text of the first problem, in pi's words.
pub(crate) fn apply_edits(
    content: &str,
    edits: &[Replacement],
    path: &str,
) -> Result<Applied, String> {
    let single = edits.len() == 1;
    let edits: Vec<Replacement> = edits
        .iter()
        .map(|edit| Replacement {
            old_text: normalize_to_lf(&edit.old_text).into_owned(),
            new_text: normalize_to_lf(&edit.new_text).into_owned(),
        })
        .collect();
    if let Some(i) = edits.iter().position(|edit| edit.old_text.is_empty()) {
        return Err(if single {
            format!("oldText must not be empty in {path}.")
        } else {
            format!("edits[{i}].oldText must not be empty in {path}.")
        });
    }

    let fuzzy_content = OnceCell::new();
    let fuzzy = || -> &str { fuzzy_content.get_or_init(|| normalize_for_fuzzy_match(content)) };
    let needs_fuzzy = edits.iter().any(|edit| {
        !content.contains(&edit.old_text)
            && fuzzy().contains(&*normalize_for_fuzzy_match(&edit.old_text))
    });
    let base: &str = if needs_fuzzy { fuzzy() } else { content };

    let mut matched = Vec::with_capacity(edits.len());
    for (i, edit) in edits.iter().enumerate() {
        let fuzzy_old = normalize_for_fuzzy_match(&edit.old_text);
        let (at, len) = match base.find(&edit.old_text) {
            Some(at) => (at, edit.old_text.len()),
            None => match fuzzy().find(&*fuzzy_old) {
                // Only reachable when `base` is the fuzzy text itself.
                Some(at) if needs_fuzzy => (at, fuzzy_old.len()),
                _ => {
                    return Err(if single {
                        format!(
                            "Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines."
                        )
                    } else {
                        format!(
                            "Could not find edits[{i}] in {path}. The oldText must match exactly including all whitespace and newlines."
                        )
                    });
                }
            },
        };
        // Uniqueness is judged in the fuzzy text, so an exact match that differs from
        // another occurrence only by trailing spaces or quote style is still ambiguous.
        let occurrences = fuzzy().matches(&*fuzzy_old).count();
        if occurrences > 1 {
            return Err(if single {
                format!(
                    "Found {occurrences} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique."
                )
            } else {
                format!(
                    "Found {occurrences} occurrences of edits[{i}] in {path}. Each oldText must be unique. Please provide more context to make it unique."
                )
            });
        }
        matched.push((
            i,
            Splice {
                at,
                len,
                new_text: edit.new_text.clone(),
            },
        ));
    }

    matched.sort_by_key(|(_, splice)| splice.at);
    for pair in matched.windows(2) {
        let ((i, previous), (j, current)) = (&pair[0], &pair[1]);
        if previous.at + previous.len > current.at {
            return Err(format!(
                "edits[{i}] and edits[{j}] overlap in {path}. Merge them into one edit or target disjoint regions."
            ));
        }
    }
    let splices: Vec<Splice> = matched.into_iter().map(|(_, splice)| splice).collect();
    let splices = if needs_fuzzy {
        widen_to_lines(content, base, &splices)?
    } else {
        splices
    };
    let after = splice_all(content, &splices);
    if after == content {
        return Err(if single {
            format!(
                "No changes made to {path}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."
            )
        } else {
            format!("No changes made to {path}. The replacements produced identical content.")
        });
    }
    Ok(Applied { after, splices })
}

/// Apply sorted, disjoint splices to `text`, whose offset 0 is `origin` in the splices.
fn splice_from(text: &str, origin: usize, splices: &[Splice]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut position = 0;
    for splice in splices {
        let at = splice.at - origin;
        out.push_str(&text[position..at]);
        out.push_str(&splice.new_text);
        position = at + splice.len;
    }
    out.push_str(&text[position..]);
    out
}

fn splice_all(text: &str, splices: &[Splice]) -> String {
    splice_from(text, 0, splices)
}

/// Byte ranges of the lines of `text`, each with its `\n`.
fn line_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for (i, _) in text.match_indices('\n') {
        spans.push((start, i + 1));
        start = i + 1;
    }
    if start < text.len() {
        spans.push((start, text.len()));
    }
    spans
}

/// Turn splices located in the fuzzy text `base` into splices of `original` covering whole
/// lines: the touched lines are rewritten from `base` with the splices applied; every other
/// line keeps its original bytes. Splices touching the same lines are grouped.
fn widen_to_lines(original: &str, base: &str, splices: &[Splice]) -> Result<Vec<Splice>, String> {
    let original_lines = line_spans(original);
    let base_lines = line_spans(base);
    // Fuzzy normalisation never adds or removes a line feed; a mismatch would be a bug.
    if original_lines.len() != base_lines.len() {
        return Err(
            "Cannot preserve unchanged lines because the base content has a different line count."
                .into(),
        );
    }
    let outside = || "Replacement range is outside the base content.".to_owned();
    let mut groups: Vec<(usize, usize, Vec<Splice>)> = Vec::new();
    for splice in splices {
        let start = base_lines
            .iter()
            .position(|&(s, e)| (s..e).contains(&splice.at))
            .ok_or_else(outside)?;
        let end_offset = splice.at + splice.len;
        let end = start
            + base_lines[start..]
                .iter()
                .position(|&(_, e)| e >= end_offset)
                .ok_or_else(outside)?
            + 1;
        match groups.last_mut() {
            Some((_, group_end, members)) if start < *group_end => {
                *group_end = (*group_end).max(end);
                members.push(splice.clone());
            }
            _ => groups.push((start, end, vec![splice.clone()])),
        }
    }
    Ok(groups
        .into_iter()
        .map(|(start, end, members)| {
            let (base_start, base_end) = (base_lines[start].0, base_lines[end - 1].1);
            let at = original_lines[start].0;
            Splice {
                at,
                len: original_lines[end - 1].1 - at,
                new_text: splice_from(&base[base_start..base_end], base_start, &members),
            }
        })
        .collect())
}

/// Apply splices located in `normalize_to_lf(original)` to `original` itself: text outside
/// the splices keeps its bytes and line endings, and line breaks in a new text take the line
/// ending of the line where its splice starts.
pub(crate) fn splice_into_original(original: &str, splices: &[Splice]) -> String {
    // Only CRLF changes length when normalising: the LF of the n-th CRLF sits n bytes earlier
    // in the normalised text. A range covering that LF covers the whole CRLF.
    let crlfs: Vec<usize> = original.match_indices("\r\n").map(|(i, _)| i).collect();
    let mut seen = 0;
    let mut to_original = |offset: usize| {
        while seen < crlfs.len() && crlfs[seen] - seen < offset {
            seen += 1;
        }
        offset + seen
    };
    let mut out = Seam::default();
    let mut position = 0;
    for splice in splices {
        let start = to_original(splice.at);
        out.push(&original[position..start]);
        match line_ending_at(original, start) {
            "\n" => out.push(&splice.new_text),
            ending => out.push(&splice.new_text.replace('\n', ending)),
        }
        position = to_original(splice.at + splice.len);
    }
    out.push(&original[position..]);
    out.text
}

/// Output that never lets a CR before a seam and an LF after it merge into one CRLF: such a
/// pair gets an LF of its own, so the written file has the line breaks the diff shows.
#[derive(Default)]
struct Seam {
    text: String,
}

impl Seam {
    fn push(&mut self, part: &str) {
        if part.is_empty() {
            return;
        }
        if self.text.ends_with('\r') && part.starts_with('\n') {
            self.text.push('\n');
        }
        self.text.push_str(part);
    }
}

/// The line ending of the line containing `offset` (for an unterminated last line, that of
/// the line before). A lone CR counts only in files without any LF (classic Mac endings).
fn line_ending_at(content: &str, offset: usize) -> &'static str {
    let lf = content[offset..]
        .find('\n')
        .map(|i| offset + i)
        .or_else(|| content[..offset].rfind('\n'));
    match lf {
        None if content.contains('\r') => "\r",
        None => "\n",
        Some(lf) if lf > 0 && content.as_bytes()[lf - 1] == b'\r' => "\r\n",
        Some(_) => "\n",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(old: &str, new: &str) -> Replacement {
        Replacement {
            old_text: old.into(),
            new_text: new.into(),
        }
    }

    #[test]
    fn fuzzy_match_rewrites_only_touched_lines() {
        let content = "keep  \nsay \u{201C}hi\u{201D}   \nend\u{2014}\n";
        let applied = apply_edits(content, &[edit("say \"hi\"", "say \"bye\"")], "f").unwrap();
        assert_eq!(applied.after, "keep  \nsay \"bye\"\nend\u{2014}\n");
    }

    #[test]
    fn crlf_file_keeps_its_endings() {
        let original = "a\r\nb\r\nc\r\n";
        let lf = normalize_to_lf(original);
        let applied = apply_edits(&lf, &[edit("b\n", "B1\nB2\n")], "f").unwrap();
        assert_eq!(
            splice_into_original(original, &applied.splices),
            "a\r\nB1\r\nB2\r\nc\r\n"
        );
    }

    #[test]
    fn ambiguity_is_judged_in_fuzzy_text() {
        let err = apply_edits("x\nx \n", &[edit("x\n", "y\n")], "f").unwrap_err();
        assert!(
            err.starts_with("Found 2 occurrences of the text in f."),
            "{err}"
        );
    }
}
