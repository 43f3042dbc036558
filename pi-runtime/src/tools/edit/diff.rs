//! What `edit` reports in `details`: a display diff with line numbers and
//! four lines of context, a unified patch, and the first changed line.

use serde::Serialize;
use similar::{DiffTag, TextDiff};

/// Context lines shown around each change.
const CONTEXT: usize = 4;

/// The `details` of a successful edit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EditDiff {
    /// `+ 12 new line`, `- 12 old line`, `  12 context`, and ` ...` for skipped runs.
    pub(crate) diff: String,
    /// A unified patch with `--- <path>` / `+++ <path>` headers.
    pub(crate) patch: String,
    /// The first changed line, numbered in the new content.
    pub(crate) first_changed_line: Option<usize>,
}

enum Part<'a> {
    Same(Vec<&'a str>),
    Removed(Vec<&'a str>),
    Added(Vec<&'a str>),
}

impl Part<'_> {
    fn is_change(&self) -> bool {
        !matches!(self, Part::Same(_))
    }
}

/// Diff `before` and `after` (both LF-normalised) by lines.
///
/// Only the window that holds every change, with a line more than the context around it, is
/// given to the diff: its line numbers are shifted back to the file's. Diffing a 50 MB file
/// whole for a one-line edit took seconds and several copies of its lines.
pub(crate) fn edit_diff(path: &str, before: &str, after: &str) -> EditDiff {
    let window = Window::of(before, after);
    let diff = TextDiff::from_lines(window.before, window.after);
    let old = diff.old_slices();
    let new = diff.new_slices();
    let mut parts = Vec::new();
    for op in diff.ops() {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        let old_lines = || {
            old[old_range.clone()]
                .iter()
                .map(|line| strip(line))
                .collect()
        };
        let new_lines = || {
            new[new_range.clone()]
                .iter()
                .map(|line| strip(line))
                .collect()
        };
        match tag {
            DiffTag::Equal => parts.push(Part::Same(old_lines())),
            DiffTag::Delete => parts.push(Part::Removed(old_lines())),
            DiffTag::Insert => parts.push(Part::Added(new_lines())),
            DiffTag::Replace => {
                parts.push(Part::Removed(old_lines()));
                parts.push(Part::Added(new_lines()));
            }
        }
    }
    let width = line_count(before).max(line_count(after)).to_string().len();
    let (diff_text, first_changed_line) = display(&parts, width, window.first_line);
    let patch = diff
        .unified_diff()
        .context_radius(CONTEXT)
        .header(path, path)
        .to_string();
    EditDiff {
        diff: diff_text,
        patch: shift_hunks(&patch, window.first_line - 1),
        first_changed_line,
    }
}

/// The part of two texts that differs, widened by whole lines of context.
struct Window<'a> {
    before: &'a str,
    after: &'a str,
    /// The 1-based number of the window's first line, in both texts.
    first_line: usize,
}

impl<'a> Window<'a> {
    fn of(before: &'a str, after: &'a str) -> Window<'a> {
        let (b, a) = (before.as_bytes(), after.as_bytes());
        let prefix = common_prefix(b, a);
        let suffix = common_suffix(&b[prefix..], &a[prefix..]);
        // One line more than the context, so that the diff still sees whether lines were
        // skipped before and after it.
        let lines = CONTEXT + 1;
        let mut start = b[..prefix]
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(0, |i| i + 1);
        for _ in 0..lines {
            if start == 0 {
                break;
            }
            start = b[..start - 1]
                .iter()
                .rposition(|&c| c == b'\n')
                .map_or(0, |i| i + 1);
        }
        // From the first line start inside the common suffix, which is one in both texts.
        let tail = &b[b.len() - suffix..];
        let mut end = tail
            .iter()
            .position(|&c| c == b'\n')
            .map_or(tail.len(), |i| i + 1);
        for _ in 0..lines {
            end = tail[end..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(tail.len(), |i| end + i + 1);
        }
        let kept_after = suffix - end;
        Window {
            before: &before[start..before.len() - kept_after],
            after: &after[start..after.len() - kept_after],
            first_line: line_count(&before[..start]),
        }
    }
}

/// Bytes at the start of both, compared a block at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 4096;
    let len = a.len().min(b.len());
    let mut at = 0;
    while at + BLOCK <= len && a[at..at + BLOCK] == b[at..at + BLOCK] {
        at += BLOCK;
    }
    at + a[at..len]
        .iter()
        .zip(&b[at..len])
        .take_while(|(x, y)| x == y)
        .count()
}

/// Bytes at the end of both, compared a block at a time.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 4096;
    let len = a.len().min(b.len());
    let (a, b) = (&a[a.len() - len..], &b[b.len() - len..]);
    let mut kept = 0;
    while kept + BLOCK <= len
        && a[len - kept - BLOCK..len - kept] == b[len - kept - BLOCK..len - kept]
    {
        kept += BLOCK;
    }
    kept + a[..len - kept]
        .iter()
        .rev()
        .zip(b[..len - kept].iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

/// Add `offset` to both line numbers of every hunk header (`@@ -4,9 +4,9 @@`) of a patch
/// made from a window. Only hunk headers start with `@`: every other line of a hunk starts
/// with ` `, `+`, `-` or `\`.
fn shift_hunks(patch: &str, offset: usize) -> String {
    if offset == 0 {
        return patch.to_owned();
    }
    let mut out = String::with_capacity(patch.len() + 16);
    for line in patch.split_inclusive('\n') {
        let header = line
            .strip_prefix("@@ -")
            .and_then(|rest| rest.split_once(" +"))
            .and_then(|(old, rest)| Some((old, rest.split_once(" @@")?)));
        match header {
            Some((old, (new, rest))) => {
                let shifted = |range: &str| match range.split_once(',') {
                    Some((start, len)) => format!("{},{len}", shift(start, offset)),
                    None => shift(range, offset),
                };
                out.push_str(&format!("@@ -{} +{} @@{rest}", shifted(old), shifted(new)));
            }
            None => out.push_str(line),
        }
    }
    out
}

fn shift(number: &str, offset: usize) -> String {
    number
        .parse::<usize>()
        .map_or_else(|_| number.to_owned(), |n| (n + offset).to_string())
}

fn strip(line: &str) -> &str {
    line.strip_suffix('\n').unwrap_or(line)
}

/// Lines as `text.split("\n").length` counts them.
fn line_count(text: &str) -> usize {
    text.bytes().filter(|&b| b == b'\n').count() + 1
}

/// The display diff of `parts`, whose first line is line `first_line` of both texts.
fn display(parts: &[Part<'_>], width: usize, first_line: usize) -> (String, Option<usize>) {
    let mut out: Vec<String> = Vec::new();
    let (mut old_line, mut new_line) = (first_line, first_line);
    let mut first_changed = None;
    let skip_marker = format!(" {} ...", " ".repeat(width));
    for (i, part) in parts.iter().enumerate() {
        match part {
            Part::Removed(lines) => {
                first_changed.get_or_insert(new_line);
                for line in lines {
                    out.push(format!("-{old_line:>width$} {line}"));
                    old_line += 1;
                }
            }
            Part::Added(lines) => {
                first_changed.get_or_insert(new_line);
                for line in lines {
                    out.push(format!("+{new_line:>width$} {line}"));
                    new_line += 1;
                }
            }
            Part::Same(lines) => {
                let after_change = i > 0 && parts[i - 1].is_change();
                let before_change = parts.get(i + 1).is_some_and(Part::is_change);
                let (lead, trail) = match (after_change, before_change) {
                    (true, true) if lines.len() <= CONTEXT * 2 => (lines.len(), 0),
                    (true, true) => (CONTEXT, CONTEXT),
                    (true, false) => (CONTEXT.min(lines.len()), 0),
                    (false, true) => (0, CONTEXT.min(lines.len())),
                    (false, false) => (0, 0),
                };
                let skipped = lines.len() - lead - trail;
                context(
                    &mut out,
                    &lines[..lead],
                    width,
                    &mut old_line,
                    &mut new_line,
                );
                // A run hidden between or after changes is marked; runs before the first
                // change and after the last one are marked only when a change borders them.
                if skipped > 0 && (after_change || before_change) {
                    out.push(skip_marker.clone());
                }
                old_line += skipped;
                new_line += skipped;
                context(
                    &mut out,
                    &lines[lines.len() - trail..],
                    width,
                    &mut old_line,
                    &mut new_line,
                );
            }
        }
    }
    (out.join("\n"), first_changed)
}

/// Unchanged lines, numbered by their old line.
fn context(
    out: &mut Vec<String>,
    lines: &[&str],
    width: usize,
    old_line: &mut usize,
    new_line: &mut usize,
) {
    for line in lines {
        out.push(format!(" {:>width$} {line}", *old_line));
        *old_line += 1;
        *new_line += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_lines_and_skips_far_context() {
        let before: String = (1..=12).map(|i| format!("line {i}\n")).collect();
        let after = before.replace("line 8\n", "LINE 8\n");
        let diff = edit_diff("f.txt", &before, &after);
        assert_eq!(diff.first_changed_line, Some(8));
        assert_eq!(
            diff.diff,
            "    ...\n  4 line 4\n  5 line 5\n  6 line 6\n  7 line 7\n- 8 line 8\n+ 8 LINE 8\n  9 line 9\n 10 line 10\n 11 line 11\n 12 line 12"
        );
        assert!(
            diff.patch
                .starts_with("--- f.txt\n+++ f.txt\n@@ -4,9 +4,9 @@\n")
        );
    }

    #[test]
    fn a_window_diffs_as_the_whole_text_does() {
        let before: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        let after = before
            .replace("line 30\n", "thirty\n")
            .replace("line 70\n", "")
            .replace("line 100\n", "line 100");
        let whole = TextDiff::from_lines(&before, &after)
            .unified_diff()
            .context_radius(CONTEXT)
            .header("f", "f")
            .to_string();
        let diff = edit_diff("f", &before, &after);
        assert_eq!(diff.patch, whole);
        assert_eq!(diff.first_changed_line, Some(30));
        assert!(
            diff.diff.starts_with("     ...\n  26 line 26\n"),
            "{}",
            diff.diff
        );
    }
}
