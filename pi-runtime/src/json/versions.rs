//! Every version of the partial arguments (SPEC §6.2, §11.3 item 1): after each delta, a
//! version that later deltas never change, at the cost of the delta, not of the value.
//!
//! The stream logs what the reader shows, in the order it shows it: a record for each value
//! as it starts (a string, a container) or as it is read (a number, a literal), and one for
//! each container that closes. Records are never changed once written, except that the open
//! string's record learns where the string ends when it closes. A version is a prefix of the
//! log, so taking one costs nothing; reading one replays its records, and that is where
//! duplicate keys resolve (the first position, the last value: SPEC §0.1). A string or key
//! without escapes is a range of the raw text, read in place; one with escapes is a range of
//! the stream's decoded text, which holds only those.

use std::collections::HashMap;
use std::fmt;

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value};

use super::parser::{PartialJsonError, Reader};
use super::scalar::Scalar;
use super::sink::{KeyText, Sink};
use super::string::push_str;

/// The end of a string that is still open.
const OPEN: usize = usize::MAX;

/// A range of the raw text or of the decoded text. The high bit of `start` marks the raw
/// text (no text comes near 2^63 bytes: a `String` holds at most `isize::MAX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: usize,
    end: usize,
}

impl Span {
    const RAW: usize = 1 << (usize::BITS - 1);

    /// The key of an array item, or of a close.
    const NONE: Span = Span { start: 0, end: 0 };

    fn raw(start: usize, end: usize) -> Span {
        Span {
            start: start | Span::RAW,
            end,
        }
    }

    fn decoded(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    fn is_raw(self) -> bool {
        self.start & Span::RAW != 0
    }

    /// The text of the range, cut at `end` instead if it is shorter.
    fn text<'a>(self, raw: &'a str, decoded: &'a str, end: usize) -> &'a str {
        let (text, start) = if self.is_raw() {
            (raw, self.start & !Span::RAW)
        } else {
            (decoded, self.start)
        };
        text.get(start..self.end.min(end)).unwrap_or_default()
    }
}

/// One thing the reader showed.
#[derive(Debug, Clone, Copy)]
struct Record {
    /// The member's key ([`Span::NONE`] for an item or a close).
    key: Span,
    event: Event,
}

#[derive(Debug, Clone, Copy)]
enum Event {
    /// A string; its end is [`OPEN`] until it closes.
    String(Span),
    /// The open string again, decoded from its first escape on: takes the place of the
    /// record before it, which read it in place.
    DecodedString(Span),
    /// A number or literal, or the preview of one still being read.
    Scalar(Scalar),
    /// The same token read further: takes the place of the record before it.
    Revised(Scalar),
    /// The same token turned out to be no value: the record before it shows nothing.
    Withdrawn,
    /// An empty container; the records up to its `Close` fill it.
    Open {
        object: bool,
    },
    Close,
}

impl Event {
    /// Whether this record voids the one before it.
    fn replaces_previous(self) -> bool {
        matches!(
            self,
            Event::Revised(_) | Event::Withdrawn | Event::DecodedString(_)
        )
    }
}

/// The log and the decoded text of a stream.
#[derive(Debug)]
struct Store {
    records: Vec<Record>,
    /// The text of the keys and strings that have escapes, decoded.
    text: String,
}

/// Streams one call's argument text into versions of its partial arguments, each kept as it
/// was whatever comes next (pi's `ToolCallArgumentsStream` and its snapshots).
///
/// It reads like [`PartialJsonParser`](super::PartialJsonParser): each byte once, the same
/// value for the same text however it was cut. Where the parser keeps one value current in
/// place, [`push`](Self::push) returns an [`ArgumentsVersion`] that [`view`](Self::view)
/// reads for as long as the stream lives. Taking a version costs nothing beyond reading the
/// delta: the stream keeps one log of what it read, and a version is a prefix of it. Reading
/// a version replays the log up to it, in time linear in the text it saw.
///
/// ```
/// use pi_runtime::json::ArgumentsStream;
/// use serde_json::json;
///
/// let mut stream = ArgumentsStream::new();
/// let before = stream.push(r#"{"path":"src/ma"#);
/// let after = stream.push(r#"in.rs","limit":2"#);
///
/// assert_eq!(stream.view(before), json!({"path": "src/ma"}));
/// assert_eq!(stream.view(after).to_value(), json!({"path": "src/main.rs", "limit": 2}));
/// assert_eq!(serde_json::to_string(&stream.view(after))?, r#"{"path":"src/main.rs","limit":2}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug)]
pub struct ArgumentsStream {
    reader: Reader<VersionSink>,
}

/// One version of the partial arguments of an [`ArgumentsStream`], read with
/// [`ArgumentsStream::view`]. It belongs to the stream that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArgumentsVersion {
    /// How many records the version saw.
    records: usize,
    /// Where the open string ended when the version was taken ([`OPEN`] if none was).
    open_end: usize,
}

impl Default for ArgumentsStream {
    fn default() -> Self {
        Self::new()
    }
}

impl ArgumentsStream {
    /// A stream that has read nothing (its version is `{}`).
    pub fn new() -> Self {
        ArgumentsStream {
            reader: Reader::new(VersionSink::new()),
        }
    }

    /// Read one delta; returns the partial arguments after it.
    pub fn push(&mut self, delta: &str) -> ArgumentsVersion {
        // The most common delta, more plain text of the open string, has a path of its own;
        // each path is a call of its own, which saves no registers for the other.
        if delta.is_empty() {
            // It changes nothing (providers do send them).
            self.version()
        } else if self.reader.in_plain_string() {
            self.extend_open_string(delta)
        } else {
            self.read_delta(delta)
        }
    }

    #[inline(never)]
    fn extend_open_string(&mut self, delta: &str) -> ArgumentsVersion {
        if self.reader.extend_open_string(delta) {
            return self.version();
        }
        self.read_delta(delta)
    }

    /// Any delta but an empty one.
    #[inline(never)]
    fn read_delta(&mut self, delta: &str) -> ArgumentsVersion {
        self.reader.read_delta(delta);
        self.version()
    }

    /// The partial arguments of the text read so far.
    pub fn version(&self) -> ArgumentsVersion {
        self.reader.sink.version(self.reader.text().len())
    }

    /// Read a version this stream made (always an object).
    pub fn view(&self, version: ArgumentsVersion) -> ArgumentsView<'_> {
        ArgumentsView {
            store: &self.reader.sink.store,
            raw: self.reader.text(),
            version,
        }
    }

    /// The raw text read so far.
    pub fn text(&self) -> &str {
        self.reader.text()
    }

    /// Why the stream stopped reading (see [`PartialJsonParser`](super::PartialJsonParser)).
    pub fn error(&self) -> Option<&PartialJsonError> {
        self.reader.error()
    }

    /// The final parse of the text read so far (SPEC §6.4), for when the call ends.
    pub fn finish(&self) -> (Value, Option<String>) {
        super::parse_tool_call_arguments(self.reader.text())
    }
}

/// A version of the partial arguments, read in place: convert it with
/// [`to_value`](Self::to_value), serialize it directly, or compare it with a [`Value`].
#[derive(Clone, Copy)]
pub struct ArgumentsView<'a> {
    store: &'a Store,
    /// The stream's raw text.
    raw: &'a str,
    version: ArgumentsVersion,
}

impl<'a> ArgumentsView<'a> {
    /// The version as a `serde_json` value (a full copy).
    pub fn to_value(&self) -> Value {
        let tree = self.replay();
        tree.value_of(Tree::ROOT)
    }

    /// The version's records, replayed into a tree.
    fn replay(&self) -> Tree<'a> {
        let records = self.store.records.as_slice();
        // (A version of another, shorter stream reads what there is.)
        let records = records.get(..self.version.records).unwrap_or(records);
        let mut tree = Tree::new();
        // The open containers, outermost (the arguments object) first.
        let mut open = vec![Tree::ROOT];
        for (index, record) in records.iter().enumerate() {
            if records
                .get(index + 1)
                .is_some_and(|next| next.event.replaces_previous())
            {
                continue;
            }
            let is_last = index + 1 == records.len();
            let node = match record.event {
                Event::Withdrawn => continue,
                Event::Close => {
                    if open.len() > 1 {
                        open.pop();
                    }
                    continue;
                }
                Event::Scalar(scalar) | Event::Revised(scalar) => TreeNode::Scalar(scalar),
                Event::String(span) | Event::DecodedString(span) => {
                    // Only the last record can be a string the version saw open.
                    let end = if is_last { self.version.open_end } else { OPEN };
                    TreeNode::String(self.text(span, end))
                }
                Event::Open { object: true } => TreeNode::Object(Vec::new()),
                Event::Open { object: false } => TreeNode::Array(Vec::new()),
            };
            let parent = open.last().copied().unwrap_or(Tree::ROOT);
            let child = tree.add(parent, self.text(record.key, OPEN), node);
            if let Event::Open { .. } = record.event {
                open.push(child);
            }
        }
        tree
    }

    fn text(&self, span: Span, end: usize) -> &'a str {
        span.text(self.raw, &self.store.text, end)
    }
}

/// A version replayed: its values, the arguments object first.
struct Tree<'a> {
    nodes: Vec<TreeNode<'a>>,
    /// Where each key of each object is among its members: `(object, key)`.
    members: HashMap<(usize, &'a str), usize>,
}

enum TreeNode<'a> {
    Scalar(Scalar),
    String(&'a str),
    Array(Vec<usize>),
    Object(Vec<(&'a str, usize)>),
}

impl<'a> Tree<'a> {
    const ROOT: usize = 0;

    fn new() -> Self {
        Tree {
            nodes: vec![TreeNode::Object(Vec::new())],
            members: HashMap::new(),
        }
    }

    /// Add `node` to the container `parent` (as member `key` of an object); returns its id.
    fn add(&mut self, parent: usize, key: &'a str, node: TreeNode<'a>) -> usize {
        let id = self.nodes.len();
        self.nodes.push(node);
        match self.nodes.get_mut(parent) {
            Some(TreeNode::Array(items)) => items.push(id),
            Some(TreeNode::Object(members)) => match self.members.get(&(parent, key)) {
                // A duplicate key keeps its first position and shows its last value.
                Some(&position) => {
                    if let Some(member) = members.get_mut(position) {
                        member.1 = id;
                    }
                }
                None => {
                    self.members.insert((parent, key), members.len());
                    members.push((key, id));
                }
            },
            _ => {}
        }
        id
    }

    fn value_of(&self, id: usize) -> Value {
        match self.nodes.get(id) {
            None => Value::Null,
            Some(TreeNode::Scalar(scalar)) => scalar.to_value(),
            Some(TreeNode::String(text)) => Value::String((*text).to_owned()),
            Some(TreeNode::Array(items)) => {
                Value::Array(items.iter().map(|&item| self.value_of(item)).collect())
            }
            Some(TreeNode::Object(members)) => Value::Object(
                members
                    .iter()
                    .map(|&(key, member)| (key.to_owned(), self.value_of(member)))
                    .collect::<Map<_, _>>(),
            ),
        }
    }
}

impl fmt::Debug for ArgumentsView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_value(), f)
    }
}

impl PartialEq<Value> for ArgumentsView<'_> {
    fn eq(&self, other: &Value) -> bool {
        self.to_value() == *other
    }
}

impl Serialize for ArgumentsView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let tree = self.replay();
        TreeView {
            tree: &tree,
            id: Tree::ROOT,
        }
        .serialize(serializer)
    }
}

/// One node of a replayed version, serialized in place.
struct TreeView<'t, 'a> {
    tree: &'t Tree<'a>,
    id: usize,
}

impl Serialize for TreeView<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let tree = self.tree;
        let node = |id| TreeView { tree, id };
        match tree.nodes.get(self.id) {
            None => serializer.serialize_unit(),
            Some(TreeNode::Scalar(scalar)) => scalar.serialize(serializer),
            Some(TreeNode::String(text)) => serializer.serialize_str(text),
            Some(TreeNode::Array(items)) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for &item in items {
                    seq.serialize_element(&node(item))?;
                }
                seq.end()
            }
            Some(TreeNode::Object(members)) => {
                let mut map = serializer.serialize_map(Some(members.len()))?;
                for &(key, member) in members {
                    map.serialize_entry(key, &node(member))?;
                }
                map.end()
            }
        }
    }
}

/// The sink behind [`ArgumentsStream`].
#[derive(Debug)]
pub(super) struct VersionSink {
    store: Store,
    /// The key of the open slot ([`Span::NONE`] for an item).
    key: Span,
    /// The open string.
    open_string: Option<OpenString>,
    /// The open slot shows a token's value, which the token's next record replaces.
    token_shown: bool,
}

#[derive(Debug, Clone, Copy)]
struct OpenString {
    record: usize,
    in_place: bool,
}

impl VersionSink {
    fn new() -> Self {
        VersionSink {
            store: Store {
                // Room for a small call's records without growing.
                records: Vec::with_capacity(16),
                // Many calls have no escapes: allocated when one comes.
                text: String::new(),
            },
            key: Span::NONE,
            open_string: None,
            token_shown: false,
        }
    }

    /// The version now, with `raw_len` bytes of raw text read.
    fn version(&self, raw_len: usize) -> ArgumentsVersion {
        ArgumentsVersion {
            records: self.store.records.len(),
            open_end: match self.open_string {
                Some(OpenString { in_place: true, .. }) => raw_len,
                Some(OpenString {
                    in_place: false, ..
                }) => self.store.text.len(),
                None => OPEN,
            },
        }
    }

    /// Make room for `len` more bytes of decoded text. The first escape allocates it whole,
    /// with room for more, rather than through the growth path.
    fn reserve_decoded(&mut self, len: usize) {
        let text = &mut self.store.text;
        if text.capacity() == 0 {
            *text = String::with_capacity(len.max(32) * 2);
        }
    }

    /// The open string starts: its record is the next one.
    fn open_string(&mut self, text: Span, event: fn(Span) -> Event) {
        self.open_string = Some(OpenString {
            record: self.store.records.len(),
            in_place: text.is_raw(),
        });
        self.write(self.key, event(text));
    }

    fn write(&mut self, key: Span, event: Event) {
        let records = &mut self.store.records;
        if records.len() == records.capacity() {
            // Per-character streams write records quickly: grow fourfold, copying less often.
            records.reserve(records.len() * 3);
        }
        records.push(Record { key, event });
    }

    fn open_slot(&mut self, key: Span) {
        self.key = key;
        self.token_shown = false;
    }
}

impl Sink for VersionSink {
    /// The log keeps what a duplicate key showed before; nothing needs setting aside.
    type Saved = ();

    const READS_IN_PLACE: bool = true;

    fn begin_delta(&mut self, _open_string: bool) {}

    fn string_buffer(&mut self) -> Option<&mut String> {
        Some(&mut self.store.text)
    }

    fn start_key(&mut self) -> usize {
        // (The reader decodes a key here only if it has an escape.)
        self.reserve_decoded(0);
        self.store.text.len()
    }

    fn key_buffer(&mut self) -> &mut String {
        &mut self.store.text
    }

    fn enter_key(&mut self, key: KeyText, _raw: &str) {
        self.open_slot(match key {
            KeyText::InPlace { start, end } => Span::raw(start, end),
            KeyText::Decoded { start } => Span::decoded(start, self.store.text.len()),
        });
    }

    fn enter_index(&mut self) {
        self.open_slot(Span::NONE);
    }

    fn end_value(&mut self) {}

    fn end_string(&mut self, raw_end: usize) {
        let Some(open) = self.open_string.take() else {
            return;
        };
        let end = if open.in_place {
            raw_end
        } else {
            self.store.text.len()
        };
        if let Some(Record {
            event: Event::String(span) | Event::DecodedString(span),
            ..
        }) = self.store.records.get_mut(open.record)
        {
            span.end = end;
        }
    }

    fn close(&mut self) {
        self.write(Span::NONE, Event::Close);
    }

    fn show_string(&mut self) {
        // (The reader decodes a string from its start when it has an escape.)
        self.reserve_decoded(0);
        let start = self.store.text.len();
        self.open_string(Span::decoded(start, OPEN), Event::String);
    }

    fn append(&mut self, text: &str) {
        push_str(&mut self.store.text, text);
    }

    fn show_string_in_place(&mut self, start: usize) {
        self.open_string(Span::raw(start, OPEN), Event::String);
    }

    fn show_whole_string_in_place(&mut self, start: usize, end: usize) {
        self.write(self.key, Event::String(Span::raw(start, end)));
    }

    fn string_escapes(&mut self, so_far: &str) {
        self.reserve_decoded(so_far.len());
        let start = self.store.text.len();
        push_str(&mut self.store.text, so_far);
        // (The reader decodes a string from its start when the delta that starts it holds an
        // escape, so a version has seen the record read in place: a new one replaces it.)
        self.open_string(Span::decoded(start, OPEN), Event::DecodedString);
    }

    fn show_container(&mut self, object: bool) {
        self.write(self.key, Event::Open { object });
    }

    fn show_scalar(&mut self, value: Scalar) -> Option<()> {
        let event = if self.token_shown {
            Event::Revised(value)
        } else {
            Event::Scalar(value)
        };
        self.token_shown = true;
        self.write(self.key, event);
        None
    }

    fn restore(&mut self, _saved: ()) {
        self.withdraw();
    }

    fn withdraw(&mut self) {
        // Without its token's value, a duplicate key shows its old one again.
        self.token_shown = false;
        self.write(self.key, Event::Withdrawn);
    }
}
