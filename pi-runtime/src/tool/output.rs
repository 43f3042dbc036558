//! Output too long for the model: the text is cut in pi's truncation format (head and tail
//! kept) and the full text saved to a file the result names. MCP results (20 KB) and a
//! tool's `max_output` policy both go through [`cap_text`].

use std::io;
use std::path::PathBuf;

use crate::message::ContentBlock;

/// Where the full text of a cut result (and an MCP server's binary resources) are written.
pub trait OutputSaver: Send + Sync {
    /// Save `bytes`; `extension` is the file's extension with its dot (`.txt`, `.gz`, `.bin`).
    /// Returns the path the model is told to read.
    ///
    /// # Errors
    /// The file could not be written; the model is told so, with the error's text.
    fn save(&self, extension: &str, bytes: &[u8]) -> io::Result<PathBuf>;
}

/// The default [`OutputSaver`]: a new file `pi-output-<random><ext>` (`pi-mcp-…` for an MCP
/// client's) in a directory (the system's temporary directory unless told otherwise), kept
/// after the run so the model can read it.
///
/// ```
/// use pi_runtime::tool::{OutputSaver, TempFileSaver};
///
/// let dir = tempfile::tempdir()?;
/// let path = TempFileSaver::in_dir(dir.path()).save(".txt", b"full output")?;
/// assert_eq!(std::fs::read_to_string(&path)?, "full output");
/// assert!(path.starts_with(dir.path()));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct TempFileSaver {
    dir: Option<PathBuf>,
    prefix: &'static str,
}

impl Default for TempFileSaver {
    fn default() -> Self {
        TempFileSaver {
            dir: None,
            prefix: "pi-output-",
        }
    }
}

impl TempFileSaver {
    /// Files go to `std::env::temp_dir()`.
    pub fn new() -> Self {
        TempFileSaver::default()
    }

    /// Files go to `dir`.
    pub fn in_dir(dir: impl Into<PathBuf>) -> Self {
        TempFileSaver {
            dir: Some(dir.into()),
            ..TempFileSaver::default()
        }
    }

    /// File names start with `prefix`.
    #[must_use]
    pub fn with_prefix(mut self, prefix: &'static str) -> Self {
        self.prefix = prefix;
        self
    }
}

impl OutputSaver for TempFileSaver {
    fn save(&self, extension: &str, bytes: &[u8]) -> io::Result<PathBuf> {
        let dir = self.dir.clone().unwrap_or_else(std::env::temp_dir);
        let file = tempfile::Builder::new()
            .prefix(self.prefix)
            .suffix(extension)
            .rand_bytes(16)
            .tempfile_in(dir)?;
        std::fs::write(file.path(), bytes)?;
        let (_, path) = file.keep().map_err(|e| e.error)?;
        Ok(path)
    }
}

/// The text blocks of `content` joined with `\n`.
pub(crate) fn joined_text(content: &[ContentBlock]) -> String {
    let mut texts = content.iter().filter_map(ContentBlock::as_text);
    let mut joined = texts.next().unwrap_or_default().to_owned();
    for text in texts {
        joined.push('\n');
        joined.push_str(text);
    }
    joined
}

/// When the joined text of `content` is over `max_bytes`: one text block cut to
/// `max_bytes` (and the line naming the saved file) followed by the images, and the saved
/// file's path (`None` when saving failed; the text says why). `None` when it fits.
pub(crate) fn cap_text(
    content: &[ContentBlock],
    max_bytes: usize,
    saver: &dyn OutputSaver,
) -> Option<(Vec<ContentBlock>, Option<String>)> {
    let joined = joined_text(content);
    if joined.len() <= max_bytes {
        return None;
    }
    let mut text = truncated(&joined, max_bytes);
    let path = match saver.save(".txt", joined.as_bytes()) {
        Ok(path) => {
            let path = path.display().to_string();
            text.push_str(&format!(
                "\n\n[Full output: {path} (read it with offset/limit)]"
            ));
            Some(path)
        }
        Err(error) => {
            text.push_str(&format!("\n\n[Could not save the full output: {error}]"));
            None
        }
    };
    let images = content
        .iter()
        .filter(|b| matches!(b, ContentBlock::Image(_)))
        .cloned();
    let cut = std::iter::once(ContentBlock::text(text))
        .chain(images)
        .collect();
    Some((cut, path))
}

/// The text block of a cut result, without the line about the saved file: pi's format,
/// half of `max_bytes` from the head and the rest from the tail.
fn truncated(text: &str, max_bytes: usize) -> String {
    let bytes = text.as_bytes();
    let half = max_bytes / 2;
    let mut head_end = half;
    while head_end > 0 && !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = bytes.len() - (max_bytes - half);
    while tail_start < bytes.len() && !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let removed = text[head_end..tail_start].chars().count();
    let lines = text.split('\n').count() - usize::from(text.ends_with('\n'));
    format!(
        "Warning: truncated output (original token count: {})\nTotal output lines: {lines}\n\n{}…{removed} chars truncated…{}",
        bytes.len().div_ceil(4),
        &text[..head_end],
        &text[tail_start..],
    )
}
