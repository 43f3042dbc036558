//! Server-sent events (the WHATWG `text/event-stream` format), decoded in one pass: the one
//! decoder of model responses (`provider::http`) and of MCP's streamable HTTP (`mcp::http`).
//!
//! The decoder owns one text buffer. A network piece is checked as UTF-8 once, as it
//! arrives (an invalid byte fails at once, not when the body ends), and appended; a
//! recorded body is taken as the buffer itself, with no copy and no check. Lines are found
//! with `memchr` (a line that arrives in many pieces is scanned once), and an event is
//! handed out as slices of the buffer: its data is copied
//! only when it spans several `data:` lines. Before a piece is appended, what was read is
//! dropped, but never the event being read, so every byte is scanned once and moved at most
//! once: time is linear in the body.
//!
//! An event may not grow past `max_event_bytes`, counted from its first `event:` or
//! `data:` line: past that the decoder stops with an error, so one endless event costs at
//! most that much memory and that much scanning.
//!
//! Spec rules kept: lines end with CRLF, LF or CR (a CR at the end of a piece waits for
//! the next one's LF); a leading BOM is skipped; `:` lines are comments; one space after
//! the field's colon is dropped; data lines join with LF; an unnamed event is `message`; an
//! `id` with a NUL is ignored, and so is a `retry` that is not a number; an unfinished event
//! at the end of the body is dropped. A blank line ends an event that has any field: one
//! without data has `data: None` (WHATWG does not dispatch it; the model transport skips it,
//! MCP reads its `id` and `retry`).

use std::ops::Range;

use thiserror::Error;

/// The most bytes of one event a response may send by default (16 MiB): far above any
/// model's single delta, far below what would hurt a process.
// MCP takes rmcp's limit instead.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) const DEFAULT_MAX_EVENT_BYTES: usize = 16 << 20;

/// Above this, a buffer that shrank to much less is given back.
const KEEP_CAPACITY: usize = 1 << 20;

/// One event: its `event:` name (`message` when none), its data (`None` without a `data:`
/// line), its `id` and its `retry` time in milliseconds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Event<'a> {
    pub(crate) name: &'a str,
    pub(crate) data: Option<&'a str>,
    pub(crate) id: Option<&'a str>,
    pub(crate) retry: Option<u64>,
}

/// Why a body cannot be decoded; each transport says it in its own words.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub(crate) enum SseError {
    /// An event grew past the limit (bytes).
    #[error("A server-sent event exceeds the limit of {}", byte_size(*.0))]
    TooLarge(usize),
    /// A byte that is not UTF-8 where it stands, at this offset of the body.
    #[error("The response stream is not valid UTF-8: byte 0x{byte:02x} at offset {offset}")]
    InvalidUtf8 { byte: u8, offset: u64 },
}

/// Where the current event's data is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Data {
    None,
    /// One `data:` line: this range of the buffer.
    Line(Range<usize>),
    /// Several lines, joined in `joined`.
    Joined,
}

/// An incremental SSE decoder; see the module docs.
#[derive(Debug)]
pub(crate) struct SseDecoder {
    text: String,
    /// The first byte not yet read as part of a complete line.
    pos: usize,
    /// How far the line at `pos` is known to hold no line end: a line that arrives in many
    /// pieces is scanned once, not once per piece.
    scanned: usize,
    /// The first byte of the current event (its first `event:`/`data:` line); equal to
    /// `pos` while the event has none.
    event_start: usize,
    name: Option<Range<usize>>,
    data: Data,
    id: Option<Range<usize>>,
    retry: Option<u64>,
    joined: String,
    /// The last event was handed out; its state is cleared on the next call.
    dispatched: bool,
    /// The last line ended with a CR at the end of the buffer: a LF next belongs to it.
    skip_lf: bool,
    /// The first character (a possible BOM) was looked at.
    started: bool,
    /// The start of a character cut by the end of the last piece.
    tail: Vec<u8>,
    /// Body bytes received, for the offset of an invalid byte.
    received: u64,
    /// An invalid byte ended the body: the error once the text before it is read.
    failure: Option<SseError>,
    max_event_bytes: usize,
}

impl SseDecoder {
    pub(crate) fn new(max_event_bytes: usize) -> Self {
        SseDecoder {
            text: String::new(),
            pos: 0,
            scanned: 0,
            event_start: 0,
            name: None,
            data: Data::None,
            id: None,
            retry: None,
            joined: String::new(),
            dispatched: false,
            skip_lf: false,
            started: false,
            tail: Vec::new(),
            received: 0,
            failure: None,
            max_event_bytes,
        }
    }

    /// A whole recorded body, read in place.
    // Only the model transport replays recorded bodies.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn push_text(&mut self, text: String) {
        self.compact();
        if self.text.is_empty() && self.tail.is_empty() {
            self.text = text;
        } else {
            self.text.push_str(&text);
        }
    }

    /// The next piece of a body. Call it once [`next_event`](Self::next_event) has nothing
    /// more to give. A byte that is not UTF-8 where it stands ends the body there: the
    /// events before it are still handed out, then `next_event` fails.
    pub(crate) fn push_bytes(&mut self, piece: &[u8]) {
        self.compact();
        if self.failure.is_some() {
            return;
        }
        let offset = self.received;
        self.received += piece.len() as u64;
        if let Err(failure) = self.append(piece, offset) {
            self.failure = Some(failure);
        }
    }

    fn append(&mut self, mut piece: &[u8], offset: u64) -> Result<(), SseError> {
        if !self.tail.is_empty() {
            let tail_offset = offset - self.tail.len() as u64;
            let width = utf8_width(self.tail[0]);
            let take = (width - self.tail.len()).min(piece.len());
            self.tail.extend_from_slice(&piece[..take]);
            piece = &piece[take..];
            match std::str::from_utf8(&self.tail) {
                Ok(char) => {
                    self.text.push_str(char);
                    self.tail.clear();
                }
                Err(error) if error.error_len().is_none() => return Ok(()),
                Err(_) => return Err(invalid_utf8(self.tail[0], tail_offset)),
            }
        }
        let complete = complete_prefix(piece);
        let valid = match std::str::from_utf8(&piece[..complete]) {
            Ok(text) => text,
            Err(error) => {
                let at = error.valid_up_to();
                let valid = std::str::from_utf8(&piece[..at]).unwrap_or_default();
                self.text.push_str(valid);
                return Err(invalid_utf8(piece[at], offset + at as u64));
            }
        };
        self.text.push_str(valid);
        let cut = &piece[complete..];
        if let Err(error) = std::str::from_utf8(cut)
            && error.error_len().is_some()
        {
            return Err(invalid_utf8(cut[0], offset + complete as u64));
        }
        self.tail.extend_from_slice(cut);
        Ok(())
    }

    /// The body ended; an unfinished event is dropped.
    ///
    /// # Errors
    /// The body ends inside a UTF-8 character.
    pub(crate) fn finish(&self) -> Result<(), SseError> {
        if let Some(failure) = &self.failure {
            return Err(failure.clone());
        }
        match self.tail.first() {
            Some(&byte) => Err(invalid_utf8(byte, self.received - self.tail.len() as u64)),
            None => Ok(()),
        }
    }

    /// The next complete event in what was pushed, or `None` until more arrives.
    ///
    /// # Errors
    /// The event grew past the limit, or the events before an invalid byte were all read.
    pub(crate) fn next_event(&mut self) -> Result<Option<Event<'_>>, SseError> {
        if self.dispatched {
            self.clear_event();
        }
        if !self.started && !self.text.is_empty() {
            self.started = true;
            if self.text.starts_with('\u{feff}') {
                self.pos = '\u{feff}'.len_utf8();
                self.event_start = self.pos;
            }
        }
        loop {
            let bytes = self.text.as_bytes();
            if self.skip_lf && self.pos < bytes.len() {
                self.skip_lf = false;
                if bytes[self.pos] == b'\n' {
                    self.pos += 1;
                    if !self.has_fields() {
                        self.event_start = self.pos;
                    }
                }
            }
            let line_start = self.pos;
            // The event may take `max_event_bytes` in all; the line is looked for only
            // within what is left of that.
            let budget = self
                .max_event_bytes
                .saturating_sub(line_start - self.event_start);
            let window_end = bytes.len().min(line_start + budget);
            let from = self.scanned.clamp(line_start, window_end);
            let Some(found) = memchr::memchr2(b'\n', b'\r', &bytes[from..window_end]) else {
                self.scanned = window_end;
                if window_end - line_start == budget {
                    return Err(SseError::TooLarge(self.max_event_bytes));
                }
                if let Some(failure) = &self.failure {
                    return Err(failure.clone());
                }
                return Ok(None);
            };
            let line_end = from + found;
            self.pos = line_end + 1;
            if bytes[line_end] == b'\r' {
                match bytes.get(self.pos) {
                    Some(b'\n') => self.pos += 1,
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            if self.line(line_start..line_end) {
                self.dispatched = true;
                return Ok(Some(self.event()));
            }
            if !self.has_fields() {
                self.event_start = self.pos;
            }
        }
    }

    /// Read one complete line; `true` when it dispatches an event.
    fn line(&mut self, line: Range<usize>) -> bool {
        let bytes = &self.text.as_bytes()[line.clone()];
        if bytes.is_empty() {
            return self.has_fields();
        }
        if bytes[0] == b':' {
            return false;
        }
        let (field, value) = match memchr::memchr(b':', bytes) {
            Some(colon) => {
                let mut value = line.start + colon + 1;
                if self.text.as_bytes().get(value) == Some(&b' ') && value < line.end {
                    value += 1;
                }
                (&bytes[..colon], value..line.end)
            }
            None => (bytes, line.end..line.end),
        };
        match field {
            b"data" => self.data_line(value),
            b"event" => self.name = Some(value),
            b"id" if !self.text.as_bytes()[value.clone()].contains(&0) => self.id = Some(value),
            b"retry" => {
                if let Ok(retry) = self.text[value].parse() {
                    self.retry = Some(retry);
                }
            }
            _ => {}
        }
        false
    }

    fn data_line(&mut self, value: Range<usize>) {
        match &self.data {
            Data::None => self.data = Data::Line(value),
            Data::Line(first) => {
                self.joined.clear();
                self.joined.push_str(&self.text[first.clone()]);
                self.joined.push('\n');
                self.joined.push_str(&self.text[value]);
                self.data = Data::Joined;
            }
            Data::Joined => {
                self.joined.push('\n');
                self.joined.push_str(&self.text[value]);
            }
        }
    }

    fn event(&self) -> Event<'_> {
        let name = match &self.name {
            Some(range) if !range.is_empty() => &self.text[range.clone()],
            _ => "message",
        };
        let data = match &self.data {
            Data::None => None,
            Data::Line(range) => Some(&self.text[range.clone()]),
            Data::Joined => Some(self.joined.as_str()),
        };
        Event {
            name,
            data,
            id: self.id.clone().map(|range| &self.text[range]),
            retry: self.retry,
        }
    }

    fn has_fields(&self) -> bool {
        self.name.is_some() || self.data != Data::None || self.id.is_some() || self.retry.is_some()
    }

    fn clear_event(&mut self) {
        self.dispatched = false;
        self.name = None;
        self.data = Data::None;
        self.id = None;
        self.retry = None;
        self.event_start = self.pos;
    }

    /// Drop what was read, keeping the event being read; give back a buffer that a large
    /// event left much too big.
    fn compact(&mut self) {
        if self.dispatched {
            self.clear_event();
        }
        let keep_from = self.event_start.min(self.pos);
        if keep_from == 0 {
            return;
        }
        self.text.drain(..keep_from);
        self.pos -= keep_from;
        self.scanned = self.scanned.saturating_sub(keep_from);
        self.event_start -= keep_from;
        let shift = |range: &mut Range<usize>| {
            range.start -= keep_from;
            range.end -= keep_from;
        };
        if let Some(name) = &mut self.name {
            shift(name);
        }
        if let Some(id) = &mut self.id {
            shift(id);
        }
        if let Data::Line(range) = &mut self.data {
            shift(range);
        }
        if self.text.capacity() > KEEP_CAPACITY && self.text.len() < self.text.capacity() / 4 {
            self.text.shrink_to(KEEP_CAPACITY.max(self.text.len() * 2));
        }
    }
}

/// How many bytes the character starting with `lead` takes (1 for a byte that starts
/// none, which then fails the check).
fn utf8_width(lead: u8) -> usize {
    match lead {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => 1,
    }
}

/// The length of `piece` without a character its end cuts.
fn complete_prefix(piece: &[u8]) -> usize {
    let len = piece.len();
    // A cut character has its lead byte among the last three bytes.
    for back in 1..=3.min(len) {
        let byte = piece[len - back];
        if byte & 0xC0 != 0x80 {
            return if utf8_width(byte) > back {
                len - back
            } else {
                len
            };
        }
    }
    len
}

fn invalid_utf8(byte: u8, offset: u64) -> SseError {
    SseError::InvalidUtf8 { byte, offset }
}

/// `16 MiB`, `512 KiB` or `100 bytes`.
pub(crate) fn byte_size(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event with data of `pieces` fed one by one, then the end, as `name: data`.
    fn decode(pieces: &[&[u8]], max: usize) -> Result<Vec<String>, SseError> {
        let mut decoder = SseDecoder::new(max);
        let mut events = Vec::new();
        for piece in pieces {
            decoder.push_bytes(piece);
            while let Some(event) = decoder.next_event()? {
                if let Some(data) = event.data {
                    events.push(format!("{}: {data}", event.name));
                }
            }
        }
        decoder.finish()?;
        Ok(events)
    }

    /// The same body split at every byte gives the same events.
    fn decode_every_split(body: &[u8]) -> Vec<String> {
        let whole = decode(&[body], 1 << 20).expect("decodes");
        for cut in 0..=body.len() {
            let (a, b) = body.split_at(cut);
            assert_eq!(
                decode(&[a, b], 1 << 20).expect("decodes"),
                whole,
                "cut {cut}"
            );
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(decode(&bytes, 1 << 20).expect("decodes"), whole, "bytewise");
        whole
    }

    #[test]
    fn fields_names_and_multi_line_data() {
        let body = b"event: ping\ndata: {}\n\ndata: a\ndata:b\ndata\n\ndata: x\n\n";
        assert_eq!(
            decode_every_split(body),
            ["ping: {}", "message: a\nb\n", "message: x"]
        );
    }

    #[test]
    fn every_line_ending_and_comments() {
        let body = b": keep-alive\r\n\r\ndata: a\r\n\r\ndata: b\r\rdata: c\n\n:x\n\n";
        assert_eq!(
            decode_every_split(body),
            ["message: a", "message: b", "message: c"]
        );
    }

    #[test]
    fn bom_ids_and_events_without_data() {
        let body = "\u{feff}id: 1\nretry: 5\nevent: lonely\n\nevent:\ndata: é\n\n";
        assert_eq!(decode_every_split(body.as_bytes()), ["message: é"]);
    }

    #[test]
    fn ids_and_retries_come_with_their_event() {
        let mut decoder = SseDecoder::new(1024);
        decoder.push_bytes(b"id: 7\nretry: 3000\n\nid: a\0b\nretry: soon\ndata: x\n\n");
        let first = decoder.next_event().unwrap().unwrap();
        assert_eq!(
            (first.data, first.id, first.retry),
            (None, Some("7"), Some(3000))
        );
        let second = decoder.next_event().unwrap().unwrap();
        assert_eq!(
            (second.data, second.id, second.retry),
            (Some("x"), None, None)
        );
    }

    #[test]
    fn an_unfinished_event_is_dropped() {
        assert_eq!(decode_every_split(b"data: a\n\ndata: b\n"), ["message: a"]);
    }

    #[test]
    fn multi_byte_characters_split_anywhere() {
        let body = "data: 日本語 🦀\n\n".as_bytes();
        assert_eq!(decode_every_split(body), ["message: 日本語 🦀"]);
    }

    #[test]
    fn an_invalid_byte_fails_in_its_piece() {
        // The events before it in the same piece come first.
        let mut decoder = SseDecoder::new(1024);
        decoder.push_bytes(b"data: ok\n\ndata: \xff\n\n");
        assert_eq!(decoder.next_event().unwrap().unwrap().data, Some("ok"));
        assert!(decoder.next_event().is_err());
        let error = decode(&[b"data: ok\n\n", b"data: \xff", b"never read"], 1024).unwrap_err();
        assert_eq!(
            error.to_string(),
            "The response stream is not valid UTF-8: byte 0xff at offset 16"
        );
        // A lead byte whose next byte cannot follow it fails before more arrives.
        let error = decode(&[b"data: \xe0\x41"], 1024).unwrap_err();
        assert_eq!(
            error.to_string(),
            "The response stream is not valid UTF-8: byte 0xe0 at offset 6"
        );
        let error = decode(&[b"data: \xe6\x97"], 1024).unwrap_err();
        assert_eq!(
            error.to_string(),
            "The response stream is not valid UTF-8: byte 0xe6 at offset 6"
        );
    }

    #[test]
    fn an_event_over_the_limit_fails_without_waiting_for_its_end() {
        let error = decode(&[b"data: 0123456789", b"0123456789"], 16).unwrap_err();
        assert_eq!(error, SseError::TooLarge(16));
        assert_eq!(
            error.to_string(),
            "A server-sent event exceeds the limit of 16 bytes"
        );
        // Comments and blank lines between events do not count.
        let events = decode(&[b": 0123456789\n\n\n: 0123456789\ndata: 0123\n\n"], 16);
        assert_eq!(events.unwrap(), ["message: 0123"]);
        // The limit holds within one piece too.
        let mut decoder = SseDecoder::new(16);
        decoder.push_text(format!("data: {}\n\n", "x".repeat(100)));
        assert!(decoder.next_event().is_err());
    }

    #[test]
    fn a_recorded_body_is_read_in_place() {
        let mut decoder = SseDecoder::new(1024);
        decoder.push_text("event: a\ndata: 1\n\ndata: 2\n\n".to_owned());
        let first = decoder.next_event().unwrap().unwrap();
        assert_eq!(
            first,
            Event {
                name: "a",
                data: Some("1"),
                id: None,
                retry: None,
            }
        );
        let second = decoder.next_event().unwrap().unwrap();
        assert_eq!(second.data, Some("2"));
        assert_eq!(decoder.next_event().unwrap(), None);
    }

    #[test]
    fn read_text_is_dropped_before_a_piece_is_added() {
        let mut decoder = SseDecoder::new(1024);
        decoder.push_bytes(b"data: 1\n\ndata: 2");
        assert_eq!(decoder.next_event().unwrap().unwrap().data, Some("1"));
        assert_eq!(decoder.next_event().unwrap(), None);
        decoder.push_bytes(b"3\n\n");
        assert_eq!(decoder.text, "data: 23\n\n");
        assert_eq!(decoder.next_event().unwrap().unwrap().data, Some("23"));
    }
}
