//! A command's merged output as it streams in, kept with bounded memory: a decoded tail for
//! the model and for progress updates, the counts the footer needs, and the raw bytes, moved
//! to a log file (see [`logs`](super::logs)) once the output outgrows what the model is shown.
//!
//! Every size limit counts the bytes the model sees, that is after lossy UTF-8 decoding: an
//! invalid byte becomes U+FFFD, three bytes, so a cap on raw bytes would let the decoded text
//! grow to three times the cap.

use std::io;
use std::path::PathBuf;

use super::log_file::{Cut, LogFile};
use super::logs::LogDir;
use crate::tools::truncate::{
    MAX_BYTES, MAX_LINES, TruncatedBy, Truncation, tail_of, truncate_tail,
};

/// Raw bytes read at a time when the full output is read back from its log.
const READ_CHUNK: usize = 64 * 1024;

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
    /// Where the log goes once there is one.
    logs: LogDir,
    /// The most raw bytes the log keeps (see [`LogFile`]).
    max_log_bytes: u64,
    /// Bytes of an incomplete UTF-8 sequence at the end of the last chunk.
    undecoded: Vec<u8>,
    /// Raw output while it is small; moved into `file` once it is not.
    raw: Vec<u8>,
    file: Option<LogFile>,
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
    /// Output whose log keeps at most `max_log_bytes` of it.
    pub(crate) fn new(max_log_bytes: u64) -> Self {
        Output {
            max_log_bytes,
            ..Output::default()
        }
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
            Some(log) => log.write(data),
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
        if let Some(log) = &mut self.file {
            log.finish()?;
        }
        Ok(())
    }

    /// What the log left out of the output, once [`finish`](Self::finish)ed.
    pub(crate) fn log_cut(&self) -> Option<Cut> {
        self.file.as_ref().and_then(LogFile::cut)
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
            full_output_path: self.file.as_ref().map(|log| log.path().to_path_buf()),
        })
    }

    /// Bytes of the last line as lines are counted (a final newline does not start one):
    /// the line a partial tail shows the end of. pi reports 0 for a newline-terminated line;
    /// this is its real size.
    pub(crate) fn last_line_bytes(&self) -> usize {
        if self.open_line {
            self.last_line_bytes
        } else {
            self.last_complete_line_bytes
        }
    }

    /// The whole output as the model sees it, or, when that is longer than `max` bytes, its
    /// start and end around an omission marker, `max` bytes in all. Returns the text and
    /// whether it was shortened. Reads at most about `max` raw bytes back from the log.
    pub(crate) fn full_text(&mut self, max: usize) -> io::Result<(String, bool)> {
        if self.total_decoded <= max {
            let raw = self.read_raw(0, self.total_raw)?;
            let text = String::from_utf8_lossy(&raw).into_owned();
            if text.len() <= max {
                return Ok((text, false));
            }
        }
        // The marker is sized with the whole length, which has at least as many digits as
        // the omitted part, so the result stays within `max`.
        let marker_len = omission_marker(self.total_decoded).len();
        let budget = max.saturating_sub(marker_len);
        let head = self.decoded_head(budget / 2)?;
        let tail = self.decoded_tail(budget - budget / 2)?;
        let omitted = self.total_decoded.saturating_sub(head.len() + tail.len());
        Ok((format!("{head}{}{tail}", omission_marker(omitted)), true))
    }

    /// The longest decoded prefix of the output that fits in `max` bytes.
    fn decoded_head(&mut self, max: usize) -> io::Result<String> {
        let mut head = String::new();
        let mut pending = Vec::new();
        let mut offset = 0;
        // Decoding never shrinks text, so `max` raw bytes always decode to `max` bytes or
        // more: the loop reads at most `max` plus one chunk.
        while head.len() < max && offset < self.total_raw {
            let len = READ_CHUNK.min(self.total_raw - offset);
            pending.extend_from_slice(&self.read_raw(offset, len)?);
            offset += len;
            head.push_str(&decode_complete(&mut pending));
        }
        if head.len() < max && !pending.is_empty() {
            head.push_str(&String::from_utf8_lossy(&pending));
        }
        let mut end = head.len().min(max);
        while !head.is_char_boundary(end) {
            end -= 1;
        }
        head.truncate(end);
        Ok(head)
    }

    /// The longest decoded suffix of the output that fits in `max` bytes.
    fn decoded_tail(&mut self, max: usize) -> io::Result<String> {
        let len = max.min(self.total_raw);
        let raw = self.read_raw(self.total_raw - len, len)?;
        // Continuation bytes at the cut belong to a character that starts before it.
        let skip = raw
            .iter()
            .take(3)
            .take_while(|&&b| b & 0xC0 == 0x80)
            .count();
        let decoded = String::from_utf8_lossy(&raw[skip..]);
        Ok(tail_of(&decoded, max).to_owned())
    }

    /// `len` raw bytes from `offset`, from memory or from the log (within its head or its
    /// tail when it was capped: the reads of [`full_text`](Self::full_text) stay within
    /// the halves of [`BashOptions::MIN_LOG_BYTES`](crate::tools::BashOptions::MIN_LOG_BYTES)).
    fn read_raw(&mut self, offset: usize, len: usize) -> io::Result<Vec<u8>> {
        let Some(log) = &mut self.file else {
            let end = (offset + len).min(self.raw.len());
            return Ok(self.raw[offset.min(end)..end].to_vec());
        };
        log.read(offset as u64, len as u64)
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
        let (file, path) = self.logs.create()?;
        let mut log = LogFile::new(file, path, self.max_log_bytes);
        log.write(&std::mem::take(&mut self.raw))?;
        self.file = Some(log);
        Ok(())
    }
}

fn omission_marker(omitted: usize) -> String {
    format!("\n\n[... {omitted} bytes omitted ...]\n\n")
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
    use crate::tools::BashOptions;

    const DEFAULT_MAX_LOG_BYTES: u64 = BashOptions::DEFAULT_MAX_LOG_BYTES;

    #[test]
    fn split_sequences_decode_across_chunks() {
        let mut output = Output::new(DEFAULT_MAX_LOG_BYTES);
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
        let mut output = Output::new(DEFAULT_MAX_LOG_BYTES);
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

    #[test]
    fn the_full_text_cap_counts_decoded_bytes() {
        let mut output = Output::new(DEFAULT_MAX_LOG_BYTES);
        // 2 MB of raw output that decodes to 4 MB: each invalid byte becomes U+FFFD.
        let chunk = [0xFF, b'\n'].repeat(1000);
        for _ in 0..1000 {
            output.append(&chunk).unwrap();
        }
        output.finish().unwrap();
        let max = 1024 * 1024;
        let (text, truncated) = output.full_text(max).unwrap();
        assert!(truncated);
        assert!(text.len() <= max && text.len() > max - 8, "{}", text.len());
        let (head, rest) = text.split_once("\n\n[... ").unwrap();
        let (omitted, tail) = rest.split_once(" bytes omitted ...]\n\n").unwrap();
        assert!(head.starts_with("\u{FFFD}\n\u{FFFD}") && tail.ends_with("\u{FFFD}\n"));
        let omitted: usize = omitted.parse().unwrap();
        assert_eq!(head.len() + omitted + tail.len(), 4_000_000);
        std::fs::remove_file(output.snapshot().unwrap().full_output_path.unwrap()).unwrap();
    }

    #[test]
    fn a_short_output_is_whole() {
        let mut output = Output::new(DEFAULT_MAX_LOG_BYTES);
        output.append(b"caf\xE9\n").unwrap();
        output.finish().unwrap();
        assert_eq!(
            output.full_text(1024).unwrap(),
            ("caf\u{FFFD}\n".to_owned(), false)
        );
        // Over the cap once decoded, though not in raw bytes.
        let mut output = Output::new(DEFAULT_MAX_LOG_BYTES);
        output.append(&[0xFF; 400]).unwrap();
        output.finish().unwrap();
        let (text, truncated) = output.full_text(1000).unwrap();
        assert!(truncated && text.len() <= 1000, "{}", text.len());
    }
}
