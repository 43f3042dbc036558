//! A command's merged output as it streams in, kept with bounded memory: a decoded tail for
//! the model and for progress updates, the counts the footer needs, and the raw bytes, moved
//! to a temp file once the output outgrows what the model is shown.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

use crate::tools::truncate::{MAX_BYTES, MAX_LINES, TruncatedBy, Truncation, truncate_tail};

/// Decoded tail kept for snapshots: twice what is shown, trimmed when it doubles again.
const ROLLING_BYTES: usize = MAX_BYTES * 2;

/// What the model (or a progress update) is shown at one moment.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    pub(crate) truncation: Truncation,
    pub(crate) full_output_path: Option<PathBuf>,
}

#[derive(Debug, Default)]
pub(crate) struct Output {
    /// Bytes of an incomplete UTF-8 sequence at the end of the last chunk.
    undecoded: Vec<u8>,
    /// Raw output while it is small; moved into `file` once it is not.
    raw: Vec<u8>,
    file: Option<(File, PathBuf)>,
    tail: String,
    /// Whether `tail` starts at the start of a line (trimming may cut one in two).
    tail_cut_mid_line: bool,
    total_raw: usize,
    total_decoded: usize,
    completed_lines: usize,
    open_line: bool,
    /// Bytes of the open (unterminated) line so far.
    last_line_bytes: usize,
    /// Bytes of the last terminated line.
    last_complete_line_bytes: usize,
}

impl Output {
    pub(crate) fn new() -> Self {
        Output::default()
    }

    /// Add a chunk of raw output.
    pub(crate) fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.total_raw += data.len();
        let mut pending = std::mem::take(&mut self.undecoded);
        pending.extend_from_slice(data);
        let decoded = decode_complete(&mut pending);
        self.undecoded = pending;
        self.append_decoded(&decoded);
        if self.file.is_some() || self.outgrown() {
            self.ensure_file()?;
        }
        match &mut self.file {
            Some((file, _)) => file.write_all(data),
            None => {
                self.raw.extend_from_slice(data);
                Ok(())
            }
        }
    }

    /// No more output: decode what is left (an incomplete sequence becomes U+FFFD).
    pub(crate) fn finish(&mut self) -> io::Result<()> {
        let rest = String::from_utf8_lossy(&std::mem::take(&mut self.undecoded)).into_owned();
        self.append_decoded(&rest);
        if self.outgrown() {
            self.ensure_file()?;
        }
        if let Some((file, _)) = &mut self.file {
            file.flush()?;
        }
        Ok(())
    }

    /// The tail to show, at most [`MAX_LINES`] lines and [`MAX_BYTES`] bytes. When it is
    /// truncated the full output is on disk (`full_output_path`).
    pub(crate) fn snapshot(&mut self) -> io::Result<Snapshot> {
        let text = self.snapshot_text();
        let mut truncation = truncate_tail(text);
        let truncated = self.total_lines() > MAX_LINES || self.total_decoded > MAX_BYTES;
        truncation.truncated = truncated;
        truncation.truncated_by = if truncated {
            truncation
                .truncated_by
                .or(Some(if self.total_decoded > MAX_BYTES {
                    TruncatedBy::Bytes
                } else {
                    TruncatedBy::Lines
                }))
        } else {
            None
        };
        truncation.total_lines = self.total_lines();
        truncation.total_bytes = self.total_decoded;
        if truncated {
            self.ensure_file()?;
        }
        Ok(Snapshot {
            truncation,
            full_output_path: self.file.as_ref().map(|(_, path)| path.clone()),
        })
    }

    /// Bytes of the last line as lines are counted (a final newline does not start one):
    /// the line a partial tail shows the end of. pi reports 0 for a newline-terminated line
    /// (SPEC §9.6 \[RUST\]); this is its real size.
    pub(crate) fn last_line_bytes(&self) -> usize {
        if self.open_line {
            self.last_line_bytes
        } else {
            self.last_complete_line_bytes
        }
    }

    /// The whole output, or its first and last `max / 2` bytes around an omission marker
    /// when it is longer than `max` bytes. Returns the text and whether it was shortened.
    pub(crate) fn full_text(&mut self, max: usize) -> io::Result<(String, bool)> {
        let Some((file, _)) = &mut self.file else {
            return Ok((String::from_utf8_lossy(&self.raw).into_owned(), false));
        };
        let size = usize::try_from(file.seek(SeekFrom::End(0))?).unwrap_or(usize::MAX);
        file.seek(SeekFrom::Start(0))?;
        if size <= max {
            let mut bytes = Vec::with_capacity(size);
            file.read_to_end(&mut bytes)?;
            return Ok((String::from_utf8_lossy(&bytes).into_owned(), false));
        }
        let head_len = max / 2;
        let tail_len = max - head_len;
        let mut head = vec![0; head_len];
        file.read_exact(&mut head)?;
        let mut tail = vec![0; tail_len];
        file.seek(SeekFrom::Start((size - tail_len) as u64))?;
        file.read_exact(&mut tail)?;
        // Cut at character boundaries: drop a split sequence at the head's end and
        // continuation bytes at the tail's start.
        let head = decode_complete(&mut head);
        let skip = tail.iter().take_while(|&&b| b & 0xC0 == 0x80).count();
        let tail = String::from_utf8_lossy(&tail[skip..]);
        let omitted = size - head_len - tail_len;
        Ok((
            format!("{head}\n\n[... {omitted} bytes omitted ...]\n\n{tail}"),
            true,
        ))
    }

    fn total_lines(&self) -> usize {
        self.completed_lines + usize::from(self.open_line)
    }

    fn outgrown(&self) -> bool {
        self.total_raw > MAX_BYTES
            || self.total_decoded > MAX_BYTES
            || self.total_lines() > MAX_LINES
    }

    fn append_decoded(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.total_decoded += text.len();
        self.tail.push_str(text);
        if self.tail.len() > ROLLING_BYTES * 2 {
            self.trim_tail();
        }
        match text.rfind('\n') {
            None => {
                self.last_line_bytes += text.len();
                self.open_line = true;
            }
            Some(last) => {
                self.last_complete_line_bytes = match text[..last].rfind('\n') {
                    Some(previous) => last - previous - 1,
                    None => self.last_line_bytes + last,
                };
                self.completed_lines += text.bytes().filter(|&b| b == b'\n').count();
                self.last_line_bytes = text.len() - last - 1;
                self.open_line = self.last_line_bytes > 0;
            }
        }
    }

    fn trim_tail(&mut self) {
        let mut start = self.tail.len() - ROLLING_BYTES;
        while !self.tail.is_char_boundary(start) {
            start += 1;
        }
        self.tail_cut_mid_line = self.tail.as_bytes()[start - 1] != b'\n';
        self.tail.drain(..start);
    }

    /// The retained tail from its first whole line. When the tail is only the end of one
    /// over-long line, that end is all there is, so it is shown.
    fn snapshot_text(&self) -> &str {
        if !self.tail_cut_mid_line {
            return &self.tail;
        }
        match self.tail.find('\n') {
            Some(i) if i + 1 < self.tail.len() => &self.tail[i + 1..],
            _ => &self.tail,
        }
    }

    fn ensure_file(&mut self) -> io::Result<()> {
        if self.file.is_some() {
            return Ok(());
        }
        let (mut file, path) = tempfile::Builder::new()
            .prefix("pi-bash-")
            .suffix(".log")
            .tempfile()?
            .keep()
            .map_err(|error| error.error)?;
        file.write_all(&std::mem::take(&mut self.raw))?;
        self.file = Some((file, path));
        Ok(())
    }
}

/// Decode the complete UTF-8 prefix of `bytes` (invalid sequences become U+FFFD) and leave
/// only an incomplete trailing sequence in it.
fn decode_complete(bytes: &mut Vec<u8>) -> String {
    let mut out = String::with_capacity(bytes.len());
    let mut rest: &[u8] = bytes;
    loop {
        match std::str::from_utf8(rest) {
            Ok(valid) => {
                out.push_str(valid);
                rest = &[];
                break;
            }
            Err(error) => {
                let (valid, after) = rest.split_at(error.valid_up_to());
                // `valid_up_to` guarantees this prefix is UTF-8.
                out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                match error.error_len() {
                    Some(len) => {
                        out.push(char::REPLACEMENT_CHARACTER);
                        rest = &after[len..];
                    }
                    None => {
                        rest = after;
                        break;
                    }
                }
            }
        }
    }
    let keep = rest.len();
    let start = bytes.len() - keep;
    bytes.drain(..start);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_sequences_decode_across_chunks() {
        let mut output = Output::new();
        let e = "é".as_bytes();
        output.append(&[b'a', e[0]]).unwrap();
        output.append(&[e[1], b'\n', 0xFF]).unwrap();
        output.finish().unwrap();
        let snapshot = output.snapshot().unwrap();
        assert_eq!(snapshot.truncation.content, "aé\n\u{FFFD}");
        assert_eq!(snapshot.truncation.total_lines, 2);
        assert!(snapshot.full_output_path.is_none());
    }

    #[test]
    fn long_output_keeps_a_bounded_tail_and_the_full_log() {
        let mut output = Output::new();
        for i in 1..=40_000 {
            output.append(format!("{i}\n").as_bytes()).unwrap();
        }
        output.finish().unwrap();
        assert!(output.tail.len() <= ROLLING_BYTES * 2);
        let snapshot = output.snapshot().unwrap();
        let t = &snapshot.truncation;
        assert_eq!((t.total_lines, t.output_lines), (40_000, 2000));
        assert!(t.content.starts_with("38001\n") && t.content.ends_with("\n40000"));
        let path = snapshot.full_output_path.unwrap();
        let log = std::fs::read_to_string(&path).unwrap();
        assert_eq!(log.lines().count(), 40_000);
        std::fs::remove_file(path).unwrap();
    }
}
