//! Line- and byte-limited views of tool output: the head of a file for
//! `read`, the tail of a command's output for `bash`. Only whole lines are kept, except the
//! tail of one over-long last line.

use serde::Serialize;

/// At most this many lines are shown.
pub const MAX_LINES: usize = 2000;
/// At most this many bytes are shown (50 KB), counting the `\n` between lines.
pub const MAX_BYTES: usize = 50 * 1024;

/// Which limit cut the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum TruncatedBy {
    /// The line limit.
    Lines,
    /// The byte limit.
    Bytes,
}

/// What a truncation kept and what it dropped; serialised into result `details` with pi's
/// field names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    /// The kept text.
    pub content: String,
    /// Whether anything was dropped.
    pub truncated: bool,
    /// The limit that cut it, if any.
    pub truncated_by: Option<TruncatedBy>,
    /// Lines of the whole text (a trailing newline does not start a line).
    pub total_lines: usize,
    /// Bytes of the whole text.
    pub total_bytes: usize,
    /// Lines kept.
    pub output_lines: usize,
    /// Bytes kept.
    pub output_bytes: usize,
    /// The kept text is the end of one line longer than the byte limit (tail only).
    pub last_line_partial: bool,
    /// The first line alone is over the byte limit, so nothing was kept (head only).
    pub first_line_exceeds_limit: bool,
    /// The line limit applied.
    pub max_lines: usize,
    /// The byte limit applied.
    pub max_bytes: usize,
}

impl Truncation {
    fn untouched(content: &str, total_lines: usize) -> Self {
        Truncation {
            content: content.to_owned(),
            truncated: false,
            truncated_by: None,
            total_lines,
            total_bytes: content.len(),
            output_lines: total_lines,
            output_bytes: content.len(),
            last_line_partial: false,
            first_line_exceeds_limit: false,
            max_lines: MAX_LINES,
            max_bytes: MAX_BYTES,
        }
    }
}

/// The lines of `text` for counting: split on `\n`, without the empty piece after a final
/// newline; no lines at all for empty text.
fn lines(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    let mut lines: Vec<&str> = text.split('\n').collect();
    if text.ends_with('\n') {
        lines.pop();
    }
    lines
}

/// Keep the first lines of `text`, at most [`MAX_LINES`] lines and [`MAX_BYTES`] bytes.
pub fn truncate_head(text: &str) -> Truncation {
    let lines = lines(text);
    if lines.len() <= MAX_LINES && text.len() <= MAX_BYTES {
        return Truncation::untouched(text, lines.len());
    }
    let mut result = Truncation::untouched("", lines.len());
    result.total_bytes = text.len();
    result.truncated = true;
    result.truncated_by = Some(TruncatedBy::Bytes);
    if lines.first().is_some_and(|first| first.len() > MAX_BYTES) {
        result.output_lines = 0;
        result.first_line_exceeds_limit = true;
        return result;
    }
    let mut bytes = 0;
    let mut kept = 0;
    let mut by = TruncatedBy::Lines;
    for (i, line) in lines.iter().take(MAX_LINES).enumerate() {
        let size = line.len() + usize::from(i > 0);
        if bytes + size > MAX_BYTES {
            by = TruncatedBy::Bytes;
            break;
        }
        bytes += size;
        kept += 1;
    }
    result.content = lines[..kept].join("\n");
    result.truncated_by = Some(by);
    result.output_lines = kept;
    result.output_bytes = result.content.len();
    result
}

/// Keep the last lines of `text`, at most [`MAX_LINES`] lines and [`MAX_BYTES`] bytes. When
/// the last line alone is too long, its end is kept (`last_line_partial`).
pub fn truncate_tail(text: &str) -> Truncation {
    let lines = lines(text);
    if lines.len() <= MAX_LINES && text.len() <= MAX_BYTES {
        return Truncation::untouched(text, lines.len());
    }
    let mut result = Truncation::untouched("", lines.len());
    result.total_bytes = text.len();
    result.truncated = true;
    let mut bytes = 0;
    let mut first_kept = lines.len();
    let mut by = TruncatedBy::Lines;
    let mut partial = None;
    while first_kept > 0 && lines.len() - first_kept < MAX_LINES {
        let line = lines[first_kept - 1];
        let size = line.len() + usize::from(first_kept < lines.len());
        if bytes + size > MAX_BYTES {
            by = TruncatedBy::Bytes;
            if first_kept == lines.len() {
                partial = Some(tail_of(line, MAX_BYTES));
            }
            break;
        }
        bytes += size;
        first_kept -= 1;
    }
    result.content = match partial {
        Some(tail) => {
            result.last_line_partial = true;
            result.output_lines = 1;
            tail.to_owned()
        }
        None => {
            result.output_lines = lines.len() - first_kept;
            lines[first_kept..].join("\n")
        }
    };
    result.truncated_by = Some(by);
    result.output_bytes = result.content.len();
    result
}

/// The longest suffix of `line` that fits in `max` bytes and starts on a character boundary.
pub(crate) fn tail_of(line: &str, max: usize) -> &str {
    let mut start = line.len().saturating_sub(max);
    while !line.is_char_boundary(start) {
        start += 1;
    }
    &line[start..]
}

/// `512B`, `58.6KB`, `1.5MB`: sizes as the footers print them.
pub fn format_size(bytes: usize) -> String {
    const KB: usize = 1024;
    #[allow(
        clippy::cast_precision_loss,
        reason = "a display size with one decimal"
    )]
    let size = bytes as f64;
    if bytes < KB {
        format!("{bytes}B")
    } else if bytes < KB * KB {
        format!("{:.1}KB", size / KB as f64)
    } else {
        format!("{:.1}MB", size / (KB * KB) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(format_size(1023), "1023B");
        assert_eq!(format_size(51_200), "50.0KB");
        assert_eq!(format_size(60_000), "58.6KB");
        assert_eq!(format_size(3 * 1024 * 1024 / 2), "1.5MB");
    }

    #[test]
    fn head_keeps_whole_lines() {
        let text = "x".repeat(1000) + "\n";
        let text = text.repeat(100);
        let t = truncate_head(&text);
        assert_eq!(
            (t.output_lines, t.truncated_by),
            (51, Some(TruncatedBy::Bytes))
        );
        assert_eq!(t.total_lines, 100);
        let first = truncate_head(&"y".repeat(60_000));
        assert!(first.first_line_exceeds_limit);
        assert_eq!(first.content, "");
    }

    #[test]
    fn tail_keeps_the_end_of_an_overlong_last_line() {
        let text = format!("head\n{}é", "z".repeat(60_000));
        let t = truncate_tail(&text);
        assert!(t.last_line_partial);
        assert_eq!(t.output_lines, 1);
        assert!(t.content.len() <= MAX_BYTES && t.content.ends_with("zé"));
        let lines: String = (1..=4000).map(|i| format!("{i}\n")).collect();
        let t = truncate_tail(&lines);
        assert_eq!(
            (t.output_lines, t.truncated_by),
            (2000, Some(TruncatedBy::Lines))
        );
        assert!(t.content.starts_with("2001\n") && t.content.ends_with("\n4000"));
    }
}
