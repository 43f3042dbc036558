//! What `edit` reports in `details` (SPEC §9.5 step 7): a display diff with line numbers and
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
pub(crate) fn edit_diff(path: &str, before: &str, after: &str) -> EditDiff {
    let diff = TextDiff::from_lines(before, after);
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
    let (diff_text, first_changed_line) = display(&parts, width);
    let patch = diff
        .unified_diff()
        .context_radius(CONTEXT)
        .header(path, path)
        .to_string();
    EditDiff {
        diff: diff_text,
        patch,
        first_changed_line,
    }
}

fn strip(line: &str) -> &str {
    line.strip_suffix('\n').unwrap_or(line)
}

/// Lines as `text.split("\n").length` counts them.
fn line_count(text: &str) -> usize {
    text.bytes().filter(|&b| b == b'\n').count() + 1
}

fn display(parts: &[Part<'_>], width: usize) -> (String, Option<usize>) {
    let mut out: Vec<String> = Vec::new();
    let (mut old_line, mut new_line) = (1, 1);
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
}
