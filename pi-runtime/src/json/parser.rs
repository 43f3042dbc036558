//! The incremental partial-JSON parser (SPEC §6.2, §11.3 item 1): reads each delta once and
//! keeps the partial arguments current in place.
//!
//! The reader holds a stack of the open containers that belong to the shown value and at most
//! one open lexeme (a string or a number/literal token); what the value shows is kept by its
//! [`Sink`]. A container that opens where no value may go (after a value without a comma, or
//! as a root that is not an object) is read as a depth counter only: nothing inside it can
//! show.

use serde_json::Value;
use smallvec::SmallVec;

use super::scalar::{Scalar, Token};
use super::sink::{KeyText, Sink};
use super::string::{Escape, Read, find_special, push_str};
use super::tracked::Tracked;

/// How deeply containers may nest. The final parse (`serde_json`) refuses deeper documents, so
/// text beyond this depth can never become valid arguments; the parser stops there rather than
/// build a value whose recursive drop could overflow the stack.
pub const MAX_DEPTH: usize = 127;

/// Why a [`PartialJsonParser`] stopped reading.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PartialJsonError {
    /// A container opened more than [`MAX_DEPTH`] levels deep.
    #[error(
        "the arguments nest more than {limit} levels deep; the text from there on is not shown"
    )]
    TooDeep {
        /// The limit, [`MAX_DEPTH`].
        limit: usize,
    },
}

/// The incremental parser of one call's argument text.
///
/// After every [`push`](Self::push) its [`value`](Self::value) is exactly the partial
/// arguments of SPEC §6.2 for the text read so far, however the text was cut into deltas. Each
/// byte is read once and the value is updated in place, so a stream costs time linear in its
/// length; `push` also returns the changes it made, proportional to the delta. For values
/// that must outlive the next delta, [`ArgumentsStream`](super::ArgumentsStream) reads the
/// same way and keeps every version instead.
///
/// ```
/// use pi_runtime::json::PartialJsonParser;
/// use serde_json::json;
///
/// let mut parser = PartialJsonParser::new();
/// parser.push(r#"{"path":"src/ma"#);
/// assert_eq!(parser.value(), &json!({"path": "src/ma"}));
/// parser.push(r#"in.rs","offset":1"#);
/// assert_eq!(parser.value(), &json!({"path": "src/main.rs", "offset": 1}));
/// parser.push(r#"2.5e"#);
/// assert_eq!(parser.value(), &json!({"path": "src/main.rs", "offset": 12.5}));
/// ```
///
/// Nesting deeper than [`MAX_DEPTH`] stops the parser: the value keeps what was read before
/// the container that went too deep, [`error`](Self::error) says why, and later deltas only
/// extend [`text`](Self::text) (whose final parse then fails).
#[derive(Debug)]
pub struct PartialJsonParser {
    reader: Reader<Tracked>,
}

impl Default for PartialJsonParser {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialJsonParser {
    /// A parser that has read nothing (its value is `{}`).
    pub fn new() -> Self {
        PartialJsonParser {
            reader: Reader::new(Tracked::new()),
        }
    }

    /// Read one delta into `arguments`, the partial arguments this parser wrote so far
    /// (start with `{}`).
    pub fn push(&mut self, delta: &str, arguments: &mut Value) {
        // The caller holds the one copy; the sink works on it for the length of the delta.
        std::mem::swap(&mut self.reader.sink.value, arguments);
        self.reader.push(delta);
        std::mem::swap(&mut self.reader.sink.value, arguments);
    }

    /// The raw text read so far.
    pub fn text(&self) -> &str {
        self.reader.text()
    }

    /// Why the parser stopped reading, if it did.
    pub fn error(&self) -> Option<&PartialJsonError> {
        self.reader.error()
    }

    /// The final parse of the text read so far (SPEC §6.4), for when the call ends.
    pub fn finish(&self) -> (Value, Option<String>) {
        super::parse_tool_call_arguments(self.reader.text())
    }
}

/// The state machine of the incremental parser, feeding what it reads to a [`Sink`].
#[derive(Debug)]
pub(super) struct Reader<S: Sink> {
    pub(super) sink: S,
    text: String,
    root: Root,
    /// The open containers of the shown value; the outermost is the arguments object.
    frames: Frames,
    /// How many containers are open inside one that opened where no value goes.
    skipped: usize,
    lexeme: Lexeme<S::Saved>,
    /// The number or literal being read (its buffers are reused from token to token).
    token: Token,
    /// The last key read; it names the next value of the object that read it.
    key: KeyText,
    /// Where the open string's text starts in the raw text.
    string_start: usize,
    /// Text decoded from the current delta, not yet appended to the shown string.
    scratch: String,
    error: Option<PartialJsonError>,
    /// The root value has ended or an error stopped the reader: later text is not read.
    stopped: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Root {
    /// No root value yet (or only invalid words).
    Waiting,
    /// The root is the arguments object.
    Object,
    /// The root is something else: it shows as `{}`.
    Other,
}

/// The stack of open containers. The innermost one, read on almost every byte, is kept in a
/// plain field; the others wait in a vector that most arguments fit without allocating.
#[derive(Debug, Default)]
struct Frames {
    innermost: Option<Frame>,
    outer: SmallVec<[Frame; 8]>,
}

impl Frames {
    fn len(&self) -> usize {
        self.outer.len() + usize::from(self.innermost.is_some())
    }

    fn is_empty(&self) -> bool {
        self.innermost.is_none()
    }

    fn last(&self) -> Option<&Frame> {
        self.innermost.as_ref()
    }

    fn last_mut(&mut self) -> Option<&mut Frame> {
        self.innermost.as_mut()
    }

    fn push(&mut self, frame: Frame) {
        if let Some(outer) = self.innermost.replace(frame) {
            self.outer.push(outer);
        }
    }

    fn pop(&mut self) -> Option<Frame> {
        let innermost = self.innermost.take();
        self.innermost = self.outer.pop();
        innermost
    }
}

#[derive(Debug)]
enum Frame {
    Array,
    Object {
        phase: Phase,
        /// `Reader::key` is this object's key, still waiting for its value.
        has_key: bool,
    },
}

/// Where an object is between members. A missing colon or comma is tolerated: a value may
/// follow the key directly, and a string after a value starts the next key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Key,
    Colon,
    Value,
    Comma,
}

/// Where a value that starts now goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// The root value.
    Root,
    /// The slot the sink opened in the innermost open container.
    Live,
    /// Nowhere: it is read and dropped.
    Skip,
}

#[derive(Debug, Default)]
enum Lexeme<Saved> {
    #[default]
    None,
    String {
        escape: Escape,
        target: Target,
        /// The string has no escape so far and the sink reads it in place: nothing of it
        /// is copied ([`Sink::READS_IN_PLACE`]).
        in_place: bool,
    },
    /// A number or literal, read into [`Reader::token`].
    Token {
        slot: Slot,
        /// What the slot shows for this token now.
        shown: Option<Scalar>,
        /// The value of a duplicate key that the token's preview hides.
        hidden: Option<Saved>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Key,
    /// The string in the open slot.
    Value,
    /// A string nothing shows; whether its end ends a value of the enclosing container.
    Skip {
        ends_value: bool,
    },
}

impl<S: Sink> Reader<S> {
    pub(super) fn new(sink: S) -> Self {
        Reader {
            sink,
            // Deltas are small: room for several from the start, allocated now rather than
            // through the growth path on the first delta.
            text: String::with_capacity(64),
            root: Root::Waiting,
            frames: Frames::default(),
            skipped: 0,
            lexeme: Lexeme::None,
            token: Token::new(),
            key: KeyText::Decoded { start: 0 },
            string_start: 0,
            scratch: String::new(),
            error: None,
            stopped: false,
        }
    }

    /// Read one delta.
    #[inline]
    pub(super) fn push(&mut self, delta: &str) {
        if !self.extend_open_string(delta) {
            self.read_delta(delta);
        }
    }

    /// Whether the open lexeme is a string with no escape under way (where
    /// [`extend_open_string`](Self::extend_open_string) may read the delta).
    #[inline]
    pub(super) fn in_plain_string(&self) -> bool {
        matches!(
            self.lexeme,
            Lexeme::String {
                escape: Escape::None,
                ..
            }
        )
    }

    /// The most common delta, read without the state machine: more plain text of the open
    /// string. Returns `false` for any other delta.
    #[inline]
    pub(super) fn extend_open_string(&mut self, delta: &str) -> bool {
        let Lexeme::String {
            escape: Escape::None,
            target,
            in_place,
        } = self.lexeme
        else {
            return false;
        };
        // (An empty delta goes the long way, which reports no change for it.)
        if delta.is_empty() || find_special(delta.as_bytes()).is_some() {
            return false;
        }
        push_str(&mut self.text, delta);
        self.sink.begin_delta(target == Target::Value);
        if in_place {
            return true;
        }
        match target {
            Target::Key => push_str(self.sink.key_buffer(), delta),
            Target::Value => match self.sink.string_buffer() {
                Some(buffer) => push_str(buffer, delta),
                None => self.sink.append(delta),
            },
            Target::Skip { .. } => {}
        }
        true
    }

    #[inline]
    pub(super) fn read_delta(&mut self, delta: &str) {
        push_str(&mut self.text, delta);
        let open_string = matches!(
            self.lexeme,
            Lexeme::String {
                target: Target::Value,
                ..
            }
        );
        self.sink.begin_delta(open_string);
        let bytes = delta.as_bytes();
        let mut at = 0;
        while at < bytes.len() && !self.stopped {
            at = match self.lexeme {
                Lexeme::String { .. } => self.read_string(delta, at),
                Lexeme::Token { .. } => self.read_token(bytes, at),
                Lexeme::None if self.skipped > 0 => self.skipped_byte(bytes[at], at),
                Lexeme::None => self.structural(bytes, at),
            };
        }
        self.flush_string();
        self.show_preview();
    }

    pub(super) fn text(&self) -> &str {
        &self.text
    }

    pub(super) fn error(&self) -> Option<&PartialJsonError> {
        self.error.as_ref()
    }

    /// The root value has ended: the rest of the text is not read.
    fn stop_at_root_end(&mut self) {
        self.stopped = true;
    }

    /// Bytes between lexemes, inside the shown value or before the root: read up to and
    /// including the first that starts a lexeme or opens or closes a container.
    fn structural(&mut self, bytes: &[u8], mut at: usize) -> usize {
        while let Some(&byte) = bytes.get(at) {
            // Whitespace first, by plain comparisons: the jump table below is hard to predict
            // when it dispatches every byte of indented text.
            if is_whitespace(byte) {
                at += 1;
                continue;
            }
            match byte {
                b':' => {
                    if let Some(Frame::Object { phase, .. }) = self.frames.last_mut()
                        && *phase == Phase::Colon
                    {
                        *phase = Phase::Value;
                    }
                }
                b',' => {
                    if let Some(Frame::Object { phase, .. }) = self.frames.last_mut() {
                        *phase = Phase::Key;
                    }
                }
                b'"' => return self.start_string(bytes, at),
                b'{' | b'[' => {
                    self.open(byte == b'{');
                    return at + 1;
                }
                b'}' | b']' => {
                    self.close();
                    return at + 1;
                }
                _ => return self.start_token(bytes, at),
            }
            at += 1;
        }
        at
    }

    /// A number or literal starts at `bytes[at]`; returns where reading goes on. Most tokens
    /// start and end in one delta: those are read where they lie.
    fn start_token(&mut self, bytes: &[u8], at: usize) -> usize {
        let slot = self.enter_value();
        let end = bytes[at..].iter().position(|&byte| is_delimiter(byte));
        if let Some(length) = end {
            let whole = match slot {
                Slot::Skip => Some(None),
                _ => Token::whole(&bytes[at..at + length]),
            };
            if let Some(complete) = whole {
                self.token_ended(slot, complete, None, None);
                return at + length;
            }
        }
        self.token.restart();
        self.lexeme = Lexeme::Token {
            slot,
            shown: None,
            hidden: None,
        };
        match end {
            // A word `Token::whole` leaves to the token.
            Some(_) => at,
            // The token goes on in the next delta.
            None => {
                if slot != Slot::Skip {
                    self.token.push(&bytes[at..]);
                }
                bytes.len()
            }
        }
    }

    /// One byte inside a container that nothing shows: only its extent matters.
    fn skipped_byte(&mut self, byte: u8, at: usize) -> usize {
        match byte {
            b'"' => {
                self.lexeme = Lexeme::String {
                    escape: Escape::None,
                    target: Target::Skip { ends_value: false },
                    in_place: false,
                }
            }
            b'{' | b'[' => self.skipped += usize::from(self.depth_allows_one_more()),
            b'}' | b']' => {
                self.skipped -= 1;
                if self.skipped == 0 {
                    self.value_ended();
                }
            }
            _ => {}
        }
        at + 1
    }

    /// Where a value starting now goes; a live slot is opened in the sink. A member's key
    /// is used up: once its value has started, the object waits for a comma or the next key.
    fn enter_value(&mut self) -> Slot {
        match self.frames.last_mut() {
            None if self.root == Root::Waiting => Slot::Root,
            None => Slot::Skip,
            Some(Frame::Array) => {
                self.sink.enter_index();
                Slot::Live
            }
            Some(Frame::Object {
                phase: Phase::Value | Phase::Colon,
                has_key: has_key @ true,
            }) => {
                *has_key = false;
                self.sink.enter_key(self.key, &self.text);
                Slot::Live
            }
            Some(Frame::Object { .. }) => Slot::Skip,
        }
    }

    /// A string starts with the quote at `bytes[quote]`; returns where reading goes on.
    ///
    /// A sink that reads in place gets a string without escapes as a range of the raw text.
    /// When the delta holds the string's end or its first escape, that is known at once: a
    /// string that ends in the delta is done here, one with an escape is decoded from its
    /// start.
    fn start_string(&mut self, bytes: &[u8], quote: usize) -> usize {
        let content = quote + 1;
        let raw_start = self.delta_start(bytes) + content;
        let special = if S::READS_IN_PLACE {
            find_special(&bytes[content..])
        } else {
            None
        };
        let escaped = match special {
            Some(offset) if bytes[content + offset] == b'"' => {
                self.whole_string_in_place(raw_start, raw_start + offset);
                return content + offset + 1;
            }
            Some(_) => true,
            None => false,
        };
        let in_place = S::READS_IN_PLACE && !escaped;
        let target = self.string_target();
        match target {
            Target::Key if !in_place => {
                self.key = KeyText::Decoded {
                    start: self.sink.start_key(),
                }
            }
            Target::Value if in_place => self.sink.show_string_in_place(raw_start),
            Target::Value => self.sink.show_string(),
            _ => {}
        }
        self.string_start = raw_start;
        self.lexeme = Lexeme::String {
            escape: Escape::None,
            // A skipped string is only scanned, which decodes nothing either way.
            in_place: in_place && !matches!(target, Target::Skip { .. }),
            target,
        };
        content
    }

    /// A string without escapes has started and ended in this delta, at `start..end` of the
    /// raw text (only for a sink that reads in place): it is read at once, with no string
    /// state at all.
    fn whole_string_in_place(&mut self, start: usize, end: usize) {
        match self.string_target() {
            Target::Key => {
                self.key = KeyText::InPlace { start, end };
                self.key_read();
            }
            Target::Value => {
                self.sink.show_whole_string_in_place(start, end);
                self.value_ended();
            }
            Target::Skip { ends_value } => {
                if ends_value {
                    self.value_ended();
                }
            }
        }
    }

    /// Where a string starting now goes: the next key of the innermost object, or a value
    /// (a live slot is opened in the sink, which shows nothing in it yet).
    fn string_target(&mut self) -> Target {
        match self.frames.last() {
            Some(Frame::Object {
                phase: Phase::Key | Phase::Comma,
                ..
            }) => Target::Key,
            _ => match self.enter_value() {
                Slot::Root => {
                    self.root = Root::Other;
                    Target::Skip { ends_value: true }
                }
                Slot::Skip => Target::Skip { ends_value: true },
                Slot::Live => Target::Value,
            },
        }
    }

    /// A key has been read: its object waits for the colon and the value it names.
    fn key_read(&mut self) {
        if let Some(Frame::Object { phase, has_key }) = self.frames.last_mut() {
            *has_key = true;
            *phase = Phase::Colon;
        }
    }

    fn read_string(&mut self, text: &str, mut at: usize) -> usize {
        let delta_start = self.delta_start(text.as_bytes());
        let Lexeme::String {
            target, in_place, ..
        } = &mut self.lexeme
        else {
            return at;
        };
        let target = *target;
        if *in_place {
            let Some(offset) = find_special(&text.as_bytes()[at..]) else {
                return text.len();
            };
            let special = at + offset;
            if text.as_bytes()[special] == b'"' {
                self.string_closed(target, delta_start + special);
                return special + 1;
            }
            // An escape: from here on the string is decoded, starting with its text so far.
            *in_place = false;
            let so_far = self
                .text
                .get(self.string_start..delta_start + special)
                .unwrap_or_default();
            match target {
                Target::Key => {
                    let start = self.sink.start_key();
                    push_str(self.sink.key_buffer(), so_far);
                    self.key = KeyText::Decoded { start };
                }
                Target::Value => self.sink.string_escapes(so_far),
                Target::Skip { .. } => {}
            }
            at = special;
        }
        let Lexeme::String { escape, .. } = &mut self.lexeme else {
            return at;
        };
        let out = match target {
            Target::Key => self.sink.key_buffer(),
            Target::Value => match self.sink.string_buffer() {
                Some(buffer) => buffer,
                None => &mut self.scratch,
            },
            Target::Skip { .. } => &mut self.scratch,
        };
        let read = escape.read(text, at, out);
        if let Target::Skip { .. } = target {
            self.scratch.clear();
        }
        match read {
            Read::Open => text.len(),
            Read::Closed(next) => {
                self.string_closed(target, delta_start + next - 1);
                next
            }
        }
    }

    /// Where the delta being read starts in the raw text (which already holds it).
    fn delta_start(&self, delta: &[u8]) -> usize {
        self.text.len() - delta.len()
    }

    /// The open string has ended at `raw_end` (its closing quote) in the raw text.
    #[inline]
    fn string_closed(&mut self, target: Target, raw_end: usize) {
        let Lexeme::String { in_place, .. } = std::mem::take(&mut self.lexeme) else {
            return;
        };
        match target {
            Target::Key => {
                if in_place {
                    self.key = KeyText::InPlace {
                        start: self.string_start,
                        end: raw_end,
                    };
                }
                self.key_read();
            }
            Target::Value => {
                self.flush_string();
                self.sink.end_string(raw_end);
                self.value_ended();
            }
            Target::Skip { ends_value } => {
                if ends_value {
                    self.value_ended();
                }
            }
        }
    }

    /// Append the text decoded from this delta to the shown string.
    fn flush_string(&mut self) {
        if !self.scratch.is_empty() {
            self.sink.append(&self.scratch);
            self.scratch.clear();
        }
    }

    fn read_token(&mut self, bytes: &[u8], at: usize) -> usize {
        let end = bytes[at..]
            .iter()
            .position(|&byte| is_delimiter(byte))
            .map_or(bytes.len(), |offset| at + offset);
        let Lexeme::Token { slot, .. } = self.lexeme else {
            return end;
        };
        let word = &bytes[at..end];
        if end == bytes.len() {
            // The token goes on in the next delta.
            if slot != Slot::Skip {
                self.token.push(word);
            }
            return end;
        }
        let complete = match slot {
            Slot::Skip => None,
            _ => {
                self.token.push(word);
                self.token.complete()
            }
        };
        let Lexeme::Token {
            slot,
            shown,
            hidden,
        } = std::mem::take(&mut self.lexeme)
        else {
            return end;
        };
        self.token_ended(slot, complete, shown, hidden);
        end
    }

    /// A token in `slot` has ended; `complete` is its value, if it is one, and `shown` and
    /// `hidden` what its previews left.
    fn token_ended(
        &mut self,
        slot: Slot,
        complete: Option<Scalar>,
        shown: Option<Scalar>,
        hidden: Option<S::Saved>,
    ) {
        match slot {
            Slot::Root => {
                // An invalid word before the root is skipped; a valid scalar is the root.
                if complete.is_some() {
                    self.stop_at_root_end();
                }
            }
            Slot::Live => {
                self.update_token(complete, shown, hidden);
                self.sink.end_value();
                self.value_ended();
            }
            Slot::Skip => self.value_ended(),
        }
    }

    /// Show the unterminated token's preview at the end of a delta.
    fn show_preview(&mut self) {
        let Lexeme::Token {
            slot: Slot::Live,
            shown,
            hidden,
        } = &mut self.lexeme
        else {
            return;
        };
        let preview = self.token.preview();
        if preview == *shown {
            return;
        }
        let (shown, hidden) = (shown.take(), hidden.take());
        let (shown, hidden) = self.update_token(preview, shown, hidden);
        if let Lexeme::Token {
            shown: now_shown,
            hidden: now_hidden,
            ..
        } = &mut self.lexeme
        {
            *now_shown = shown;
            *now_hidden = hidden;
        }
    }

    /// Make the token's slot show `next`; returns the new `(shown, hidden)`.
    fn update_token(
        &mut self,
        next: Option<Scalar>,
        shown: Option<Scalar>,
        hidden: Option<S::Saved>,
    ) -> (Option<Scalar>, Option<S::Saved>) {
        if next == shown {
            return (shown, hidden);
        }
        match next {
            Some(value) => {
                let previous = self.sink.show_scalar(value);
                // The first preview moves a duplicate key's old value aside.
                let hidden = if shown.is_none() { previous } else { hidden };
                (Some(value), hidden)
            }
            None => {
                match hidden {
                    Some(old) => self.sink.restore(old),
                    None => self.sink.withdraw(),
                }
                (None, None)
            }
        }
    }

    fn depth_allows_one_more(&mut self) -> bool {
        if self.frames.len() + self.skipped < MAX_DEPTH {
            return true;
        }
        self.error = Some(PartialJsonError::TooDeep { limit: MAX_DEPTH });
        self.stopped = true;
        false
    }

    fn open(&mut self, object: bool) {
        if !self.depth_allows_one_more() {
            return;
        }
        let frame = if object {
            Frame::Object {
                phase: Phase::Key,
                has_key: false,
            }
        } else {
            Frame::Array
        };
        match self.enter_value() {
            Slot::Root if object => {
                self.root = Root::Object;
                self.frames.push(frame);
            }
            Slot::Root => {
                self.root = Root::Other;
                self.skipped = 1;
            }
            Slot::Skip => self.skipped = 1,
            Slot::Live => {
                self.sink.show_container(object);
                self.frames.push(frame);
            }
        }
    }

    fn close(&mut self) {
        // A stray closer before the root is ignored; a mismatched one closes what is open.
        if self.frames.pop().is_none() {
            return;
        }
        if self.frames.is_empty() {
            self.stop_at_root_end();
            return;
        }
        self.sink.close();
        self.value_ended();
    }

    /// A value of the innermost open container, or the root value, has ended.
    fn value_ended(&mut self) {
        match self.frames.last_mut() {
            Some(Frame::Object { phase, .. }) => *phase = Phase::Comma,
            Some(Frame::Array) => {}
            None => self.stop_at_root_end(),
        }
    }
}

fn is_whitespace(byte: u8) -> bool {
    byte <= b' ' && matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

fn is_delimiter(byte: u8) -> bool {
    matches!(
        byte,
        b' ' | b'\t' | b'\n' | b'\r' | b',' | b':' | b'{' | b'}' | b'[' | b']' | b'"'
    )
}
