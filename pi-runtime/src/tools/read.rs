//! The built-in `read` tool: a text file's lines from an offset, truncated to
//! 2000 lines / 50 KB with a footer that says how to continue, or an image as an attachment.
//!
//! Memory stays bounded whatever the file: text is read in one streaming pass that keeps
//! only what can be shown, an image over [`MAX_IMAGE_BYTES`] is refused from its size alone,
//! and anything that is not a regular file (a FIFO, a socket, a device such as `/dev/zero`)
//! is refused before a byte is read, without blocking (see [`file`](super::file)).

use std::io;
use std::path::Path;

use base64::Engine as _;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::file::{SpecialKind, nonblocking_async, special_at, special_kind};
use super::journal;
use super::truncate::{MAX_BYTES, MAX_LINES, TruncatedBy, Truncation, format_size, truncate_head};
use super::{ABORTED, WorkingDir, path::resolve_to_cwd};

/// The largest image sent: pi's limit of 4.5 MiB of base64 (headroom below Anthropic's 5 MB
/// per image), as file bytes. Base64 turns 3 bytes into 4.
pub(crate) const MAX_IMAGE_BYTES: usize = 4_718_592 / 4 * 3;
use crate::message::ContentBlock;
use crate::tool;
use crate::tool::{State, ToolContext, ToolError, ToolResult};

/// Read a text file's lines, or an image as an attachment: the `read` tool.
///
/// `offset` is 1-based (absent or 0 means line 1) and `limit` caps the line count; the
/// selection is cut to 2000 lines and 50 KB with a footer telling the model how to continue.
/// Stops with `Operation aborted` as soon as the run's signal fires. An image over 3.4 MB
/// (4.5 MB once base64-encoded) is refused, as is anything but a regular file.
///
/// # Errors
/// A missing or unreadable file, an offset past the end, an image too large (`Image <path>
/// is <size>, over the 3.4MB limit ...`), a FIFO, socket or device (`Cannot read <path>: it
/// is a named pipe (FIFO), not a regular file.`), or an abort.
///
/// ```
/// use pi_runtime::tools::{WorkingDir, read};
/// use pi_runtime::{State, ToolContext};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("a.txt"), "alpha\nbeta\ngamma\n").unwrap();
/// let cwd = State(WorkingDir::from(dir.path()));
/// let result = read(cwd, "a.txt".into(), None, Some(1.0), ToolContext::detached("c1"))
///     .await
///     .unwrap();
/// assert_eq!(result.text_content(), "alpha\n\n[3 more lines in file. Use offset=2 to continue.]");
/// # });
/// ```
#[tool(
    description = "Read the contents of a file. Supports text files and images (jpg, png, gif, webp, bmp). Images are sent as attachments. For text files, output is truncated to 2000 lines or 50KB (whichever is hit first). Use offset/limit for large files. When you need the full file, continue with offset until complete.",
    snippet = "Read file contents",
    guidelines = ["Use read to examine files instead of cat or sed."],
    strict = "prefer",
    closed = false
)]
pub async fn read(
    State(cwd): State<WorkingDir>,
    /// Path to the file to read (relative or absolute)
    path: String,
    /// Line number to start reading from (1-indexed)
    offset: Option<f64>,
    /// Maximum number of lines to read
    limit: Option<f64>,
    ctx: ToolContext,
) -> Result<ToolResult, ToolError> {
    let signal = ctx.signal();
    if signal.is_cancelled() {
        return Err(ToolError::new(ABORTED));
    }
    let request = Request {
        path: &path,
        offset,
        range: LineRange::new(offset, limit),
    };
    tokio::select! {
        biased;
        () = signal.cancelled() => Err(ToolError::new(ABORTED)),
        result = read_uncancelled(&cwd, request) => result,
    }
}

/// What the model asked for, as the messages quote it.
#[derive(Debug, Clone, Copy)]
struct Request<'a> {
    path: &'a str,
    offset: Option<f64>,
    range: LineRange,
}

async fn read_uncancelled(cwd: &Path, request: Request<'_>) -> Result<ToolResult, ToolError> {
    let absolute = resolve_to_cwd(request.path, cwd);
    // Before opening: opening a socket fails with a code (ENXIO) that hides what it is. A
    // directory is left to the read, which reports EISDIR as pi does.
    if let Some(kind) = special_at(&absolute).await
        && kind != SpecialKind::Directory
    {
        return Err(not_regular(request.path, kind));
    }
    journal::recover_async(&absolute).await;
    let mut file = nonblocking_async(tokio::fs::OpenOptions::new().read(true))
        .open(&absolute)
        .await
        .map_err(|error| access_error(&error, &absolute))?;
    let meta = file.metadata().await.map_err(|error| read_error(&error))?;
    // It may have been swapped between the look and the open.
    if let Some(kind) = special_kind(&meta)
        && kind != SpecialKind::Directory
    {
        return Err(not_regular(request.path, kind));
    }
    let mut head = [0_u8; 16];
    let head_len = read_up_to(&mut file, &mut head)
        .await
        .map_err(|error| read_error(&error))?;
    if let Some(mime) = image_mime(&head[..head_len]) {
        return read_image(file, &head[..head_len], meta.len(), mime, request.path).await;
    }
    let selection = Selection::collect(request.range, &head[..head_len], file)
        .await
        .map_err(|error| read_error(&error))?;
    let (text, truncation) = render(&selection, request)?;
    let mut result = ToolResult::text(text.clone());
    result.details = truncation.map(|t| json!({ "truncation": t }));
    result.structured_content = Some(Value::String(text));
    Ok(result)
}

/// An image as an attachment, refused when it is over [`MAX_IMAGE_BYTES`]: by its size
/// before a byte more is read, and again while reading, in case it grows meanwhile.
async fn read_image(
    file: tokio::fs::File,
    head: &[u8],
    size: u64,
    mime: &'static str,
    path: &str,
) -> Result<ToolResult, ToolError> {
    if size > MAX_IMAGE_BYTES as u64 {
        return Err(image_too_large(path, size));
    }
    let mut data = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    data.extend_from_slice(head);
    let room = (MAX_IMAGE_BYTES + 1 - head.len()) as u64;
    file.take(room)
        .read_to_end(&mut data)
        .await
        .map_err(|error| read_error(&error))?;
    if data.len() > MAX_IMAGE_BYTES {
        return Err(image_too_large(path, data.len() as u64));
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(&data);
    drop(data);
    let note = format!("Read image file [{mime}]");
    let mut result = ToolResult {
        content: vec![
            ContentBlock::text(note.clone()),
            ContentBlock::image(encoded.clone(), mime),
        ],
        ..ToolResult::default()
    };
    result.structured_content =
        Some(json!({"type": "image", "data": encoded, "mimeType": mime, "note": note}));
    Ok(result)
}

fn image_too_large(path: &str, size: u64) -> ToolError {
    let size = format_size(usize::try_from(size).unwrap_or(usize::MAX));
    ToolError::new(format!(
        "Image {path} is {size}, over the {} limit for images (4.5MB once encoded), so it was not read. Make a smaller copy with bash (for example: convert {path} -resize 2000x2000 smaller.png) and read that.",
        format_size(MAX_IMAGE_BYTES)
    ))
}

fn not_regular(path: &str, kind: SpecialKind) -> ToolError {
    ToolError::new(format!(
        "Cannot read {path}: it is {}, not a regular file.",
        kind.describe()
    ))
}

/// The text and the truncation details for a selection.
fn render(
    selection: &Selection,
    request: Request<'_>,
) -> Result<(String, Option<Truncation>), ToolError> {
    let Request {
        path,
        offset,
        range,
    } = request;
    let total = selection.total_lines;
    if range.start >= total {
        let offset = offset.unwrap_or(0.0);
        return Err(ToolError::new(format!(
            "Offset {offset} is beyond end of file ({total} lines total)"
        )));
    }
    let mut truncation = truncate_head(&selection.stored.join("\n"));
    truncation.total_lines = selection.selected_total_lines();
    truncation.total_bytes = selection.selected_bytes;
    let first = range.start + 1;
    if truncation.first_line_exceeds_limit {
        let text = format!(
            "[Line {first} is {}, exceeds {} limit. Use bash: sed -n '{first}p' {path} | head -c {MAX_BYTES}]",
            format_size(selection.first_line_bytes),
            format_size(MAX_BYTES),
        );
        return Ok((text, Some(truncation)));
    }
    if truncation.truncated {
        let last = first + truncation.output_lines - 1;
        let limit = match truncation.truncated_by {
            Some(TruncatedBy::Bytes) => format!(" ({} limit)", format_size(MAX_BYTES)),
            _ => String::new(),
        };
        let text = format!(
            "{}\n\n[Showing lines {first}-{last} of {total}{limit}. Use offset={} to continue.]",
            truncation.content,
            last + 1
        );
        return Ok((text, Some(truncation)));
    }
    let end = range.end.min(total);
    if end < total {
        let text = format!(
            "{}\n\n[{} more lines in file. Use offset={} to continue.]",
            truncation.content,
            total - end,
            end + 1
        );
        return Ok((text, None));
    }
    Ok((truncation.content, None))
}

/// The 0-based half-open line range asked for. Fractional values are truncated toward zero
/// and negative ones clamp to zero: line numbers are whole.
#[derive(Debug, Clone, Copy)]
struct LineRange {
    start: usize,
    end: usize,
}

impl LineRange {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "float-to-int `as` saturates and maps NaN to 0, which is the clamping wanted"
    )]
    fn new(offset: Option<f64>, limit: Option<f64>) -> Self {
        let start = offset.map_or(0, |offset| (offset - 1.0).max(0.0) as usize);
        let end = limit.map_or(usize::MAX, |limit| start.saturating_add(limit as usize));
        LineRange { start, end }
    }

    fn contains(self, line: usize) -> bool {
        (self.start..self.end).contains(&line)
    }
}

/// The lines of a file that `truncate_head` can show, gathered in one pass with bounded
/// memory: lines outside the range are only counted, and storing stops one line past the
/// caps (a trailing empty line does not count, so the next one decides truncation).
#[derive(Debug, Default)]
struct Selection {
    stored: Vec<String>,
    stored_bytes: usize,
    storing: bool,
    /// The line being read: its stored bytes (capped) and its full size.
    pending: Vec<u8>,
    line_bytes: usize,
    /// 0-based index of the line being read; at the end, the last line's index.
    line: usize,
    selected_lines: usize,
    selected_bytes: usize,
    last_selected_empty: bool,
    first_line_bytes: usize,
    total_lines: usize,
}

impl Selection {
    async fn collect(
        range: LineRange,
        head: &[u8],
        mut rest: impl AsyncRead + Unpin,
    ) -> io::Result<Self> {
        let mut selection = Selection {
            storing: true,
            ..Selection::default()
        };
        selection.feed(range, head);
        let mut buf = vec![0_u8; 64 * 1024];
        loop {
            let n = rest.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            selection.feed(range, &buf[..n]);
        }
        if range.contains(selection.line) {
            selection.finish_line();
        }
        selection.total_lines = selection.line + 1;
        Ok(selection)
    }

    fn feed(&mut self, range: LineRange, mut chunk: &[u8]) {
        while !chunk.is_empty() {
            let newline = chunk.iter().position(|&b| b == b'\n');
            let piece = &chunk[..newline.unwrap_or(chunk.len())];
            if range.contains(self.line) {
                self.append(piece);
                // The newline between two selected lines belongs to the selection too.
                if newline.is_some() && range.contains(self.line + 1) {
                    self.selected_bytes += 1;
                }
            }
            let Some(newline) = newline else { break };
            if range.contains(self.line) {
                self.finish_line();
            }
            self.line += 1;
            chunk = &chunk[newline + 1..];
        }
    }

    fn append(&mut self, piece: &[u8]) {
        self.selected_bytes += piece.len();
        if self.storing && self.line_bytes <= MAX_BYTES {
            // A line over the byte cap is never shown; keep just enough to know that.
            let room = MAX_BYTES + 1 - self.pending.len().min(MAX_BYTES + 1);
            self.pending
                .extend_from_slice(&piece[..piece.len().min(room)]);
        }
        self.line_bytes += piece.len();
    }

    fn finish_line(&mut self) {
        if self.selected_lines == 0 {
            self.first_line_bytes = self.line_bytes;
        }
        if self.storing {
            let past_caps = self.stored.len() > MAX_LINES || self.stored_bytes > MAX_BYTES;
            let text = String::from_utf8_lossy(&self.pending).into_owned();
            self.stored_bytes += text.len() + usize::from(!self.stored.is_empty());
            self.stored.push(text);
            self.storing = !past_caps;
        }
        self.last_selected_empty = self.line_bytes == 0;
        self.selected_lines += 1;
        self.pending.clear();
        self.line_bytes = 0;
    }

    /// Lines of the selection as `truncate_head` counts them (a trailing empty line is not
    /// a line).
    fn selected_total_lines(&self) -> usize {
        if self.selected_bytes == 0 {
            0
        } else {
            self.selected_lines - usize::from(self.last_selected_empty)
        }
    }
}

/// The MIME type of a supported image, detected from its first bytes.
fn image_mime(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else if head.starts_with(b"BM") && head.len() >= 14 {
        Some("image/bmp")
    } else {
        None
    }
}

async fn read_up_to(file: &mut tokio::fs::File, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        let n = file.read(&mut buf[filled..]).await?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    Ok(filled)
}

/// Node's wording for a failed open, which pi shows verbatim.
fn access_error(error: &io::Error, path: &Path) -> ToolError {
    let path = path.display();
    match error.kind() {
        io::ErrorKind::NotFound => ToolError::new(format!(
            "ENOENT: no such file or directory, access '{path}'"
        )),
        io::ErrorKind::PermissionDenied => {
            ToolError::new(format!("EACCES: permission denied, access '{path}'"))
        }
        _ => ToolError::new(error.to_string()),
    }
}

fn read_error(error: &io::Error) -> ToolError {
    if error.kind() == io::ErrorKind::IsADirectory {
        ToolError::new("EISDIR: illegal operation on a directory, read")
    } else {
        ToolError::new(error.to_string())
    }
}
