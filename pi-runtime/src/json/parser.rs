//! The incremental partial-JSON parser: the state machine that reads
//! each delta once and keeps the caller's partial arguments current in place. The module docs
//! of [`json`](super) describe the states and what each byte does to them.

use serde_json::Value;

use super::scalar::{Scalar, Token};
use super::string::{Escape, Read, push_str};
use super::value::Shown;

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
/// The caller owns the partial arguments: it starts them as `{}` and passes the same value to
/// every [`push`](Self::push). After each push the value is exactly the partial arguments of
/// the text read so far ([`parse_partial`](super::parse_partial) of it), however the text was
/// cut into deltas. Each byte is read once and the value is changed in place, so a push costs
/// time proportional to its delta (plus the depth of the value), and a whole stream time
/// linear in its length.
///
/// ```
/// use pi_runtime::json::PartialJsonParser;
/// use serde_json::json;
///
/// let mut parser = PartialJsonParser::new();
/// let mut arguments = json!({});
/// parser.push(r#"{"path":"src/ma"#, &mut arguments);
/// assert_eq!(arguments, json!({"path": "src/ma"}));
/// parser.push(r#"in.rs","offset":1"#, &mut arguments);
/// assert_eq!(arguments, json!({"path": "src/main.rs", "offset": 1}));
/// parser.push(r#"2.5e"#, &mut arguments);
/// assert_eq!(arguments, json!({"path": "src/main.rs", "offset": 12.5}));
/// ```
///
/// Nesting deeper than [`MAX_DEPTH`] stops the parser: the value keeps what was read before
/// the container that went too deep, [`error`](Self::error) says why, and later deltas only
/// extend [`text`](Self::text) (whose final parse then fails).
#[derive(Debug)]
pub struct PartialJsonParser {
    /// The value being shown (only during a push) and the path to the slot being filled.
    shown: Shown,
    /// The raw text read so far, for the final parse.
    text: String,
    /// The open containers of the shown value; the first is the arguments object.
    frames: Vec<Frame>,
    /// How many containers are open inside one that opened where no value goes (and so
    /// shows nothing); while it is not zero, only brackets and strings are followed.
    skipped: usize,
    lexeme: Lexeme,
    /// The number or literal being read.
    token: Token,
    /// The last key read, decoded; it names the next value of the object that read it.
    key: String,
    /// Where the text of strings that nothing shows is decoded, and dropped.
    scratch: String,
    error: Option<PartialJsonError>,
    /// The root value has ended or an error stopped the parser: later text is kept, not read.
    stopped: bool,
}

/// An open container of the shown value.
#[derive(Debug)]
enum Frame {
    Array,
    Object {
        phase: Phase,
        /// [`PartialJsonParser::key`] is this object's, still waiting for its value.
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
    /// No root value yet: this is it.
    Root,
    /// The slot just opened in [`Shown`], in the innermost open container.
    Live,
    /// Nowhere (a value where none may go): it is read and dropped.
    Skip,
}

/// The string or token being read, if any.
#[derive(Debug, Default)]
enum Lexeme {
    #[default]
    None,
    String {
        escape: Escape,
        target: Target,
    },
    /// A number or literal, read into [`PartialJsonParser::token`].
    Token {
        slot: Slot,
        /// What its slot shows for it now.
        showing: Option<Scalar>,
        /// The value of a duplicate key, hidden while the token shows its preview, and shown
        /// again if the token turns out to be no value.
        hidden: Option<Value>,
    },
}

/// What a string is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// The next key of the innermost object, decoded into [`PartialJsonParser::key`].
    Key,
    /// The value of the open slot, decoded into the string it shows.
    Value,
    /// A string nothing shows; whether its end ends a value of the enclosing container (it
    /// does not inside a skipped container).
    Skip { ends_value: bool },
}

impl Default for PartialJsonParser {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialJsonParser {
    /// A parser that has read nothing (its arguments are `{}`).
    pub fn new() -> Self {
        PartialJsonParser {
            shown: Shown::new(),
            text: String::new(),
            frames: Vec::new(),
            skipped: 0,
            lexeme: Lexeme::None,
            token: Token::new(),
            key: String::new(),
            scratch: String::new(),
            error: None,
            stopped: false,
        }
    }

    /// Read one delta and update `arguments`, the partial arguments of the text before it
    /// (`{}` before the first delta), to those of the text so far.
    pub fn push(&mut self, delta: &str, arguments: &mut Value) {
        // The reader writes through `self.shown`, so the caller's value goes there for the
        // length of the delta (a swap is O(1)); threading `arguments` through every step of
        // the state machine would say the same with a parameter on every function.
        std::mem::swap(&mut self.shown.value, arguments);
        self.read(delta);
        std::mem::swap(&mut self.shown.value, arguments);
    }

    /// The raw text read so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Why the parser stopped reading, if it did.
    pub fn error(&self) -> Option<&PartialJsonError> {
        self.error.as_ref()
    }

    /// The final parse of the text read so far, for when the call ends.
    pub fn finish(&self) -> super::ParsedArguments {
        super::parse_tool_call_arguments(&self.text)
    }

    fn read(&mut self, delta: &str) {
        push_str(&mut self.text, delta);
        let bytes = delta.as_bytes();
        let mut at = 0;
        while at < bytes.len() && !self.stopped {
            at = match self.lexeme {
                Lexeme::String { .. } => self.read_string(delta, at),
                Lexeme::Token { .. } => self.read_token(bytes, at),
                Lexeme::None if self.skipped > 0 => self.skipped_byte(bytes[at], at),
                Lexeme::None => self.structural(bytes[at], at),
            };
        }
        if let Lexeme::Token {
            slot: Slot::Live, ..
        } = self.lexeme
        {
            // A token cut by the end of the delta shows its preview.
            self.show_token(self.token.preview());
        }
    }

    /// A byte between lexemes, inside the shown value or before the root; returns where
    /// reading goes on.
    fn structural(&mut self, byte: u8, at: usize) -> usize {
        match byte {
            b' ' | b'\t' | b'\n' | b'\r' => {}
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
            b'"' => self.start_string(),
            b'{' | b'[' => self.open(byte == b'{'),
            b'}' | b']' => self.close(),
            _ => {
                // The token starts at this byte, which `read_token` reads next.
                self.start_token();
                return at;
            }
        }
        at + 1
    }

    /// A byte inside a container that nothing shows: only its extent matters.
    fn skipped_byte(&mut self, byte: u8, at: usize) -> usize {
        match byte {
            b'"' => {
                self.lexeme = Lexeme::String {
                    escape: Escape::None,
                    target: Target::Skip { ends_value: false },
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

    /// Where a value starting now goes; a live slot is opened in [`Shown`]. A member's key is
    /// used up: once its value has started, the object waits for a comma or the next key.
    fn enter_value(&mut self) -> Slot {
        match self.frames.last_mut() {
            // Once the root has started, the frames are empty only when it is not an object
            // (then what is inside it is skipped) or when it has ended (then reading stopped).
            None => Slot::Root,
            Some(Frame::Array) => {
                self.shown.enter_index();
                Slot::Live
            }
            Some(Frame::Object {
                phase: Phase::Value | Phase::Colon,
                has_key: has_key @ true,
            }) => {
                *has_key = false;
                self.shown.enter_key(&self.key);
                Slot::Live
            }
            Some(Frame::Object { .. }) => Slot::Skip,
        }
    }

    /// A value of the innermost open container, or the root value, has ended.
    fn value_ended(&mut self) {
        match self.frames.last_mut() {
            Some(Frame::Object { phase, .. }) => *phase = Phase::Comma,
            Some(Frame::Array) => {}
            None => self.stopped = true,
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

    /// `{` or `[`: a container starts.
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
            // The arguments object: the caller's `{}` already shows it.
            Slot::Root if object => self.frames.push(frame),
            // A root that is not an object shows as `{}`: nothing inside it shows.
            Slot::Root | Slot::Skip => self.skipped = 1,
            Slot::Live => {
                self.shown.show(if object {
                    Value::Object(Default::default())
                } else {
                    Value::Array(Vec::new())
                });
                self.frames.push(frame);
            }
        }
    }

    /// `}` or `]`: the innermost open container ends, whichever bracket closes it.
    fn close(&mut self) {
        // A stray closer before the root is ignored.
        if self.frames.pop().is_none() {
            return;
        }
        if self.frames.is_empty() {
            // The arguments object has ended, and with it the text that shows.
            self.stopped = true;
            return;
        }
        self.shown.leave();
        self.value_ended();
    }

    /// `"`: a string starts.
    fn start_string(&mut self) {
        let target = match self.frames.last() {
            Some(Frame::Object {
                phase: Phase::Key | Phase::Comma,
                ..
            }) => Target::Key,
            _ => match self.enter_value() {
                // A root string shows as `{}`; its end ends the root.
                Slot::Root | Slot::Skip => Target::Skip { ends_value: true },
                Slot::Live => Target::Value,
            },
        };
        match target {
            Target::Key => self.key.clear(),
            Target::Value => {
                self.shown.show(Value::String(String::new()));
            }
            Target::Skip { .. } => {}
        }
        self.lexeme = Lexeme::String {
            escape: Escape::None,
            target,
        };
    }

    /// Inside a string: decode up to its closing quote or the end of the delta.
    fn read_string(&mut self, delta: &str, at: usize) -> usize {
        let Lexeme::String { escape, target } = &mut self.lexeme else {
            return at;
        };
        let target = *target;
        let out = match target {
            Target::Key => &mut self.key,
            // (The slot shows a string unless the caller changed the value.)
            Target::Value => self.shown.string().unwrap_or(&mut self.scratch),
            Target::Skip { .. } => &mut self.scratch,
        };
        let read = escape.read(delta, at, out);
        self.scratch.clear();
        let Read::Closed(next) = read else {
            return delta.len();
        };
        self.lexeme = Lexeme::None;
        match target {
            Target::Key => {
                if let Some(Frame::Object { phase, has_key }) = self.frames.last_mut() {
                    *has_key = true;
                    *phase = Phase::Colon;
                }
            }
            Target::Value => {
                self.shown.leave();
                self.value_ended();
            }
            Target::Skip { ends_value } => {
                if ends_value {
                    self.value_ended();
                }
            }
        }
        next
    }

    /// A number or literal starts (at the byte [`read_token`](Self::read_token) reads next).
    fn start_token(&mut self) {
        let slot = self.enter_value();
        self.token = Token::new();
        self.lexeme = Lexeme::Token {
            slot,
            showing: None,
            hidden: None,
        };
    }

    /// Inside a token: read up to the delimiter that ends it or the end of the delta.
    fn read_token(&mut self, bytes: &[u8], at: usize) -> usize {
        let end = bytes[at..]
            .iter()
            .position(|&byte| is_delimiter(byte))
            .map_or(bytes.len(), |offset| at + offset);
        let Lexeme::Token { slot, .. } = self.lexeme else {
            return end;
        };
        if slot != Slot::Skip {
            self.token.push(&bytes[at..end]);
        }
        if end == bytes.len() {
            // The token may go on in the next delta.
            return end;
        }
        // The delimiter ends the token; it is read next, as structure.
        match slot {
            // A valid scalar is the root, which shows as `{}`; an invalid word before the
            // root is skipped.
            Slot::Root => self.stopped = self.token.complete().is_some(),
            Slot::Live => {
                self.show_token(self.token.complete());
                self.shown.leave();
                self.value_ended();
            }
            Slot::Skip => self.value_ended(),
        }
        self.lexeme = Lexeme::None;
        end
    }

    /// Make the open token's slot show `next`: its preview, or its final value.
    fn show_token(&mut self, next: Option<Scalar>) {
        let Lexeme::Token {
            slot: Slot::Live,
            showing,
            hidden,
        } = &mut self.lexeme
        else {
            return;
        };
        if next == *showing {
            return;
        }
        match next {
            Some(value) => {
                let previous = self.shown.show(value.to_value());
                // The first value shown moves a duplicate key's old value aside.
                if showing.is_none() {
                    *hidden = previous;
                }
            }
            None => match hidden.take() {
                Some(old) => {
                    self.shown.show(old);
                }
                None => self.shown.withdraw(),
            },
        }
        *showing = next;
    }
}

/// A byte that ends a number or literal.
fn is_delimiter(byte: u8) -> bool {
    matches!(
        byte,
        b' ' | b'\t' | b'\n' | b'\r' | b',' | b':' | b'{' | b'}' | b'[' | b']' | b'"'
    )
}
