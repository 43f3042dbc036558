//! The result the model sees of a script: its output items laid out, numbered, joined, cut to
//! the token budget (the full text saved to a file), images saved and labelled, and the header.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::vm::OutputItem;
use crate::js::{js_to_fixed_1, utf16_len};

/// The default `max_output_tokens`.
pub(crate) const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 10_000;
const CHARS_PER_TOKEN: u64 = 4;

/// Where a script's large outputs go: the full text of a cut output and each image. pi writes
/// them to temporary files, and the result names their paths.
pub trait OutputFiles: Send + Sync + 'static {
    /// Save `bytes` to a new file whose name ends in `extension` (`.txt`, `.png`); the path, or
    /// the message of the failure.
    ///
    /// # Errors
    /// The file could not be written; the message is shown to the model.
    fn save(&self, extension: &str, bytes: &[u8]) -> Result<String, String>;
}

/// Saves each output as a new file in the system's temporary folder.
#[derive(Debug, Default)]
pub struct TempOutputFiles {
    written: AtomicU64,
}

impl OutputFiles for TempOutputFiles {
    fn save(&self, extension: &str, bytes: &[u8]) -> Result<String, String> {
        let n = self.written.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos());
        let name = format!("pi-codemode-{}-{nanos}-{n}{extension}", std::process::id());
        let path: PathBuf = std::env::temp_dir().join(name);
        std::fs::write(&path, bytes).map_err(|error| error.to_string())?;
        Ok(path.display().to_string())
    }
}

/// A shared [`OutputFiles`].
pub(crate) type Files = Arc<dyn OutputFiles>;

/// One item of the laid-out result.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Item {
    Text(String),
    Image { data: String, mime_type: String },
}

impl fmt::Debug for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Item::Text(text) => f.debug_tuple("Text").field(text).finish(),
            Item::Image { mime_type, .. } => f.debug_tuple("Image").field(mime_type).finish(),
        }
    }
}

/// Number the text items when there are several, and gather the console lines into one
/// `<console_output>` item at the end.
pub(crate) fn format_output(output: Vec<OutputItem>) -> Vec<Item> {
    let total = output
        .iter()
        .filter(|item| matches!(item, OutputItem::Text { console: false, .. }))
        .count();
    let mut items = Vec::with_capacity(output.len() + 1);
    let mut console = Vec::new();
    let mut index = 0;
    for item in output {
        match item {
            OutputItem::Image { data, mime_type } => items.push(Item::Image { data, mime_type }),
            OutputItem::Text {
                text,
                console: true,
            } => console.push(text),
            OutputItem::Text { text, .. } => {
                index += 1;
                items.push(Item::Text(if total > 1 {
                    format!("==> text {index}/{total} <==\n{text}")
                } else {
                    text
                }));
            }
        }
    }
    if !console.is_empty() {
        items.push(Item::Text(format!(
            "<console_output>\n{}\n</console_output>",
            console.join("\n")
        )));
    }
    items
}

/// Join each run of adjacent text items, with a line break between pieces where the last
/// non-empty piece does not end with one.
pub(crate) fn join_adjacent_text(items: Vec<Item>) -> Vec<Item> {
    let mut joined = Vec::with_capacity(items.len());
    let mut run: Option<String> = None;
    let mut last_ends_line = true;
    for item in items {
        match item {
            Item::Text(text) => {
                let piece = run.get_or_insert_with(String::new);
                if !last_ends_line {
                    piece.push('\n');
                    last_ends_line = true;
                }
                if !text.is_empty() {
                    last_ends_line = text.ends_with('\n');
                }
                piece.push_str(&text);
            }
            image @ Item::Image { .. } => {
                joined.extend(run.take().map(Item::Text));
                last_ends_line = true;
                joined.push(image);
            }
        }
    }
    joined.extend(run.map(Item::Text));
    joined
}

/// The items cut to `max_tokens`, and the path of the saved full text when they were cut.
pub(crate) fn truncate_output(
    items: Vec<Item>,
    max_tokens: u64,
    files: &dyn OutputFiles,
) -> (Vec<Item>, Option<String>) {
    let texts: Vec<&str> = items
        .iter()
        .filter_map(|item| match item {
            Item::Text(text) => Some(text.as_str()),
            Item::Image { .. } => None,
        })
        .collect();
    let combined = texts.join("\n");
    let length = utf16_len(&combined) as u64;
    let budget = max_tokens.saturating_mul(CHARS_PER_TOKEN);
    if texts.is_empty() || length <= budget {
        return (items, None);
    }
    let head_chars = budget / 2;
    let tail_chars = budget - head_chars;
    let removed = length - budget;
    let mut text = format!(
        "Warning: truncated output (original token count: {})\nTotal output lines: {}\n\n{}…{} tokens truncated…{}",
        length.div_ceil(CHARS_PER_TOKEN),
        combined.split('\n').count(),
        utf16_prefix(&combined, head_chars),
        removed.div_ceil(CHARS_PER_TOKEN),
        utf16_tail(&combined, tail_chars),
    );
    let saved = files.save(".txt", combined.as_bytes());
    let path = match saved {
        Ok(path) => {
            text.push_str(&format!(
                "\n\n[Full output: {path} (read with offset/limit)]"
            ));
            Some(path)
        }
        Err(error) => {
            text.push_str(&format!("\n\n[Could not save the full output: {error}]"));
            None
        }
    };
    let mut cut = vec![Item::Text(text)];
    cut.extend(
        items
            .into_iter()
            .filter(|item| matches!(item, Item::Image { .. })),
    );
    (cut, path)
}

/// The longest prefix of at most `units` UTF-16 units (a surrogate pair is never split).
pub(crate) fn utf16_prefix(text: &str, units: u64) -> &str {
    let mut used = 0;
    for (index, c) in text.char_indices() {
        used += c.len_utf16() as u64;
        if used > units {
            return &text[..index];
        }
    }
    text
}

/// The longest suffix of at most `units` UTF-16 units.
fn utf16_tail(text: &str, units: u64) -> &str {
    let mut used = 0;
    for (index, c) in text.char_indices().rev() {
        used += c.len_utf16() as u64;
        if used > units {
            return &text[index + c.len_utf8()..];
        }
    }
    text
}

/// Each image preceded by a label naming the file it was saved to (the same data is saved once).
pub(crate) fn save_images(items: Vec<Item>, files: &dyn OutputFiles) -> Vec<Item> {
    let mut labels: HashMap<String, String> = HashMap::new();
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let Item::Image { data, mime_type } = &item else {
            out.push(item);
            continue;
        };
        let label = labels
            .entry(data.clone())
            .or_insert_with(|| image_label(data, mime_type, files))
            .clone();
        out.push(Item::Text(label));
        out.push(item);
    }
    out
}

fn image_label(data: &str, mime_type: &str, files: &dyn OutputFiles) -> String {
    let kind = format!("{mime_type}, {}", format_size(decoded_len(data)));
    let extension = match mime_type {
        "image/png" => ".png",
        "image/jpeg" => ".jpg",
        "image/gif" => ".gif",
        _ => ".webp",
    };
    let saved = base64_decode(data).and_then(|bytes| files.save(extension, &bytes));
    match saved {
        Ok(path) => format!("[Image saved to {path} ({kind})]"),
        Err(error) => format!("[Image ({kind}) could not be saved: {error}]"),
    }
}

/// The byte length of checked base64 (a multiple of 4 long, `=` padding only at the end).
fn decoded_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|&b| b == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

fn base64_decode(data: &str) -> Result<Vec<u8>, String> {
    let value = |byte: u8| match byte {
        b'A'..=b'Z' => Some(byte - b'A'),
        b'a'..=b'z' => Some(byte - b'a' + 26),
        b'0'..=b'9' => Some(byte - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut bytes = Vec::with_capacity(decoded_len(data));
    for chunk in data.trim_end_matches('=').as_bytes().chunks(4) {
        let mut bits: u32 = 0;
        for (index, &byte) in chunk.iter().enumerate() {
            let sextet = value(byte).ok_or("the image data is not base64")?;
            bits |= u32::from(sextet) << (18 - 6 * index);
        }
        let [_, first, second, third] = bits.to_be_bytes();
        bytes.extend_from_slice(&[first, second, third][..chunk.len().saturating_sub(1)]);
    }
    Ok(bytes)
}

/// `512B`, `58.6KB`, `1.5MB`: pi's `formatSize`.
fn format_size(bytes: usize) -> String {
    #[allow(
        clippy::cast_precision_loss,
        reason = "a display size with one decimal"
    )]
    let size = bytes as f64;
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{}KB", js_to_fixed_1(size / 1024.0))
    } else {
        format!("{}MB", js_to_fixed_1(size / (1024.0 * 1024.0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(text: &str) -> Item {
        Item::Text(text.to_owned())
    }

    #[test]
    fn adjacent_text_joins_with_line_breaks_where_missing() {
        let joined = join_adjacent_text(vec![text("a"), text(""), text("b\n"), text("c")]);
        assert_eq!(joined, vec![text("a\nb\nc")]);
    }

    #[test]
    fn base64_decodes_with_padding() {
        assert_eq!(base64_decode("aGk=").as_deref(), Ok(&b"hi"[..]));
        assert_eq!(decoded_len("aGk="), 2);
        assert_eq!(format_size(1024 + 256), "1.3KB");
    }

    #[test]
    fn cuts_keep_surrogate_pairs_whole() {
        assert_eq!(utf16_prefix("a😀b", 2), "a");
        assert_eq!(utf16_tail("a😀b", 2), "b");
    }
}
