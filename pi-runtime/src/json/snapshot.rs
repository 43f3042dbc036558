//! Immutable snapshots of the partial arguments (SPEC §6.2, §11.3 item 1): after every delta
//! a value that later deltas never change, at the cost of the delta, not of the value.
//!
//! The values live in one append-only arena of nodes per stream, shared with its snapshots.
//! Nodes are never changed once written: a container is a chain of entries from its last one
//! backwards, so adding a member writes one entry and the containers above it, and a snapshot
//! is a root node. Strings and keys are ranges of one append-only byte buffer. The string that
//! is streaming is the last text written, and its node runs to the end of the bytes its
//! snapshot holds, so a delta that only extends it writes no node at all.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use append_only_bytes::{AppendOnlyBytes, BytesSlice};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Number, Value};

use super::parser::{PartialJsonError, Reader};
use super::sink::Sink;

/// The end of the open string: the end of the bytes its snapshot holds.
const OPEN: usize = usize::MAX;
/// An object with this many members keeps a set of its keys, so that looking for a
/// duplicate key does not walk all of them.
const INDEXED_WIDTH: usize = 16;

#[derive(Debug, Clone)]
pub(super) enum Node {
    Null,
    Bool(bool),
    Number(Number),
    /// A range of the byte buffer.
    String {
        start: usize,
        end: usize,
    },
    Array(Chain),
    Object(Chain),
}

/// The entries of a container, from the last one backwards.
#[derive(Debug, Clone, Default)]
pub(super) struct Chain {
    last: Option<Arc<Entry>>,
    len: usize,
}

/// A member (with its key, a range of the byte buffer) or an item of a container.
#[derive(Debug)]
pub(super) struct Entry {
    key_start: usize,
    key_end: usize,
    value: Node,
    prev: Option<Arc<Entry>>,
}

impl Drop for Entry {
    /// Free a long chain in a loop: the default drop would recurse once per entry.
    fn drop(&mut self) {
        let mut prev = self.prev.take();
        while let Some(entry) = prev {
            prev = Arc::into_inner(entry).and_then(|mut entry| entry.prev.take());
        }
    }
}

impl Chain {
    /// The chain with one more entry.
    fn with(&self, key_start: usize, key_end: usize, value: Node) -> Chain {
        Chain {
            last: Some(Arc::new(Entry {
                key_start,
                key_end,
                value,
                prev: self.last.clone(),
            })),
            len: self.len + 1,
        }
    }

    fn iter(&self) -> impl Iterator<Item = &Entry> {
        std::iter::successors(self.last.as_deref(), |entry| entry.prev.as_deref())
    }

    /// The entries first to last.
    fn in_order(&self) -> Vec<&Entry> {
        let mut entries: Vec<&Entry> = self.iter().collect();
        entries.reverse();
        entries
    }
}

/// Streams one call's argument text into immutable snapshots of its partial arguments.
///
/// It reads like [`PartialJsonParser`](super::PartialJsonParser): each byte once, the same
/// value for the same text however it was cut. Where the parser keeps one value current in
/// place, this hands out a snapshot after every delta, which stays as it was whatever comes
/// next (pi's `ToolCallArgumentsStream`). Taking one costs the delta and the depth of what
/// it changed, never the size of the value: snapshots share every part a delta did not touch,
/// including the bytes of a string that grew.
///
/// ```
/// use pi_runtime::json::ArgumentsStream;
/// use serde_json::json;
///
/// let mut stream = ArgumentsStream::new();
/// let before = stream.push(r#"{"path":"src/ma"#);
/// let after = stream.push(r#"in.rs","limit":2"#);
///
/// assert_eq!(before, json!({"path": "src/ma"}));
/// assert_eq!(after.to_value(), json!({"path": "src/main.rs", "limit": 2}));
/// assert_eq!(serde_json::to_string(&after)?, r#"{"path":"src/main.rs","limit":2}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug)]
pub struct ArgumentsStream {
    reader: Reader<SnapshotSink>,
}

impl Default for ArgumentsStream {
    fn default() -> Self {
        Self::new()
    }
}

impl ArgumentsStream {
    /// A stream that has read nothing (its snapshot is `{}`).
    pub fn new() -> Self {
        ArgumentsStream {
            reader: Reader::new(SnapshotSink::new()),
        }
    }

    /// Read one delta; returns the partial arguments after it.
    pub fn push(&mut self, delta: &str) -> ArgumentsSnapshot {
        self.reader.push(delta);
        self.reader.sink.snapshot()
    }

    /// The partial arguments of the text read so far.
    pub fn snapshot(&mut self) -> ArgumentsSnapshot {
        self.reader.sink.snapshot()
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

/// The partial arguments at one moment of an [`ArgumentsStream`]: always an object.
///
/// Cloning costs two reference counts. Read it with [`to_value`](Self::to_value), serialize
/// it directly, or compare it with a [`Value`].
#[derive(Clone)]
pub struct ArgumentsSnapshot {
    root: Node,
    bytes: BytesSlice,
}

impl ArgumentsSnapshot {
    /// The snapshot as a `serde_json` value (a full copy).
    pub fn to_value(&self) -> Value {
        self.value_of(&self.root)
    }

    fn str(&self, start: usize, end: usize) -> &str {
        let end = if end == OPEN { self.bytes.len() } else { end };
        let bytes = self.bytes.get(start..end).unwrap_or_default();
        // Only whole `&str`s are written to the buffer, so every range is UTF-8.
        std::str::from_utf8(bytes).unwrap_or_default()
    }

    fn key(&self, entry: &Entry) -> &str {
        self.str(entry.key_start, entry.key_end)
    }

    fn value_of(&self, node: &Node) -> Value {
        match node {
            Node::Null => Value::Null,
            Node::Bool(value) => Value::Bool(*value),
            Node::Number(number) => Value::Number(number.clone()),
            Node::String { start, end } => Value::String(self.str(*start, *end).to_owned()),
            Node::Array(chain) => Value::Array(
                chain
                    .in_order()
                    .into_iter()
                    .map(|item| self.value_of(&item.value))
                    .collect(),
            ),
            Node::Object(chain) => Value::Object(
                chain
                    .in_order()
                    .into_iter()
                    .map(|member| (self.key(member).to_owned(), self.value_of(&member.value)))
                    .collect::<Map<_, _>>(),
            ),
        }
    }
}

impl fmt::Debug for ArgumentsSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_value(), f)
    }
}

impl PartialEq<Value> for ArgumentsSnapshot {
    fn eq(&self, other: &Value) -> bool {
        self.to_value() == *other
    }
}

impl Serialize for ArgumentsSnapshot {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        View {
            snapshot: self,
            node: &self.root,
        }
        .serialize(serializer)
    }
}

/// One node of a snapshot, serialized in place.
struct View<'a> {
    snapshot: &'a ArgumentsSnapshot,
    node: &'a Node,
}

impl Serialize for View<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let snapshot = self.snapshot;
        let view = |node| View { snapshot, node };
        match self.node {
            Node::Null => serializer.serialize_unit(),
            Node::Bool(value) => serializer.serialize_bool(*value),
            Node::Number(number) => number.serialize(serializer),
            Node::String { start, end } => serializer.serialize_str(snapshot.str(*start, *end)),
            Node::Array(chain) => {
                let mut seq = serializer.serialize_seq(Some(chain.len))?;
                for item in chain.in_order() {
                    seq.serialize_element(&view(&item.value))?;
                }
                seq.end()
            }
            Node::Object(chain) => {
                let mut map = serializer.serialize_map(Some(chain.len))?;
                for member in chain.in_order() {
                    map.serialize_entry(snapshot.key(member), &view(&member.value))?;
                }
                map.end()
            }
        }
    }
}

/// The sink behind [`ArgumentsStream`].
#[derive(Debug)]
pub(super) struct SnapshotSink {
    bytes: AppendOnlyBytes,
    /// The open containers; `frames[0]` is the arguments object.
    frames: Vec<OpenContainer>,
    /// The root of the last snapshot, while nothing but the open string changed since.
    root: Option<Node>,
}

#[derive(Debug)]
struct OpenContainer {
    object: bool,
    /// The finished entries.
    chain: Chain,
    slot: Option<OpenSlot>,
    /// The keys of a wide object.
    keys: Option<HashSet<Box<[u8]>>>,
}

#[derive(Debug)]
struct OpenSlot {
    key_start: usize,
    key_end: usize,
    /// The entry that already has this key: what the slot shows replaces its value.
    duplicate: Option<Arc<Entry>>,
    shown: Shown,
}

#[derive(Debug, Clone)]
enum Shown {
    Nothing,
    Node(Node),
    /// The open string, from this byte to the end of the buffer.
    String(usize),
    /// The next open container.
    Container,
}

impl OpenContainer {
    fn new(object: bool) -> Self {
        OpenContainer {
            object,
            chain: Chain::default(),
            slot: None,
            keys: None,
        }
    }

    /// The entries with the slot showing `value`. A duplicate key keeps its first position
    /// (SPEC §0.1), so the entries after it are written again.
    fn with_slot(&self, slot: &OpenSlot, value: Node) -> Chain {
        let Some(duplicate) = &slot.duplicate else {
            return self.chain.with(slot.key_start, slot.key_end, value);
        };
        let after: Vec<&Entry> = self
            .chain
            .iter()
            .take_while(|entry| !std::ptr::eq(*entry, &**duplicate))
            .collect();
        let mut chain = Chain {
            last: duplicate.prev.clone(),
            len: self.chain.len - after.len() - 1,
        }
        .with(slot.key_start, slot.key_end, value);
        for entry in after.into_iter().rev() {
            chain = chain.with(entry.key_start, entry.key_end, entry.value.clone());
        }
        chain
    }

    fn node(&self, chain: Chain) -> Node {
        if self.object {
            Node::Object(chain)
        } else {
            Node::Array(chain)
        }
    }
}

impl SnapshotSink {
    pub(super) fn new() -> Self {
        SnapshotSink {
            bytes: AppendOnlyBytes::new(),
            frames: vec![OpenContainer::new(true)],
            root: None,
        }
    }

    pub(super) fn snapshot(&mut self) -> ArgumentsSnapshot {
        let root = match &self.root {
            Some(root) => root.clone(),
            None => {
                let root = self.build();
                self.root = Some(root.clone());
                root
            }
        };
        ArgumentsSnapshot {
            root,
            bytes: self.bytes.slice(..),
        }
    }

    /// The open containers as they show now, innermost first; returns the root.
    fn build(&self) -> Node {
        let mut child = None;
        for frame in self.frames.iter().rev() {
            let shown = frame
                .slot
                .as_ref()
                .and_then(|slot| Some((slot, shown_node(&slot.shown, child.take(), OPEN)?)));
            child = Some(frame.node(match shown {
                Some((slot, value)) => frame.with_slot(slot, value),
                None => frame.chain.clone(),
            }));
        }
        child.unwrap_or(Node::Object(Chain::default()))
    }

    fn show(&mut self, shown: Shown) {
        self.root = None;
        if let Some(slot) = self.frames.last_mut().and_then(|frame| frame.slot.as_mut()) {
            slot.shown = shown;
        }
    }

    /// End the open slot of the innermost container, with what it shows.
    fn finish_slot(&mut self, child: Option<Node>) {
        let bytes = &self.bytes;
        let Some(frame) = self.frames.last_mut() else {
            return;
        };
        let Some(slot) = frame.slot.take() else {
            return;
        };
        let Some(value) = shown_node(&slot.shown, child, bytes.len()) else {
            return;
        };
        frame.chain = frame.with_slot(&slot, value);
        if !frame.object || slot.duplicate.is_some() {
            return;
        }
        match &mut frame.keys {
            Some(keys) => {
                keys.insert(key_bytes(bytes, slot.key_start, slot.key_end).into());
            }
            None if frame.chain.len >= INDEXED_WIDTH => {
                let keys = frame
                    .chain
                    .iter()
                    .map(|entry| key_bytes(bytes, entry.key_start, entry.key_end).into())
                    .collect();
                frame.keys = Some(keys);
            }
            None => {}
        }
    }
}

impl Sink for SnapshotSink {
    type Saved = Node;

    fn begin_delta(&mut self, _open_string: bool) {}

    fn array_len(&mut self) -> usize {
        self.frames.last().map_or(0, |frame| frame.chain.len)
    }

    fn enter_key(&mut self, key: &str) {
        let key_start = self.bytes.len();
        self.bytes.push_str(key);
        let key_end = self.bytes.len();
        let bytes = &self.bytes;
        if let Some(frame) = self.frames.last_mut() {
            let duplicate = find_key(bytes, frame, key.as_bytes());
            frame.slot = Some(OpenSlot {
                key_start,
                key_end,
                duplicate,
                shown: Shown::Nothing,
            });
        }
    }

    fn enter_index(&mut self, _index: usize) {
        if let Some(frame) = self.frames.last_mut() {
            frame.slot = Some(OpenSlot {
                key_start: 0,
                key_end: 0,
                duplicate: None,
                shown: Shown::Nothing,
            });
        }
    }

    fn leave(&mut self) {
        self.root = None;
        let closing = self.frames.last().is_some_and(|frame| frame.slot.is_none());
        if closing && self.frames.len() > 1 {
            if let Some(frame) = self.frames.pop() {
                let node = frame.node(frame.chain.clone());
                self.finish_slot(Some(node));
            }
        } else {
            self.finish_slot(None);
        }
    }

    fn show_string(&mut self) {
        let start = self.bytes.len();
        self.show(Shown::String(start));
    }

    fn append(&mut self, text: &str) {
        self.bytes.push_str(text);
    }

    fn show_container(&mut self, object: bool) {
        self.show(Shown::Container);
        self.frames.push(OpenContainer::new(object));
    }

    fn show_scalar(&mut self, value: Value) -> Option<Node> {
        let slot = self.frames.last()?.slot.as_ref()?;
        let previous = match &slot.shown {
            Shown::Node(node) => Some(node.clone()),
            _ => slot.duplicate.as_ref().map(|entry| entry.value.clone()),
        };
        self.show(Shown::Node(match value {
            Value::Bool(value) => Node::Bool(value),
            Value::Number(number) => Node::Number(number),
            _ => Node::Null,
        }));
        previous
    }

    fn restore(&mut self, saved: Node) {
        self.show(Shown::Node(saved));
    }

    fn withdraw(&mut self) {
        self.show(Shown::Nothing);
    }
}

/// The node a slot shows: `child` for a container, a string up to `string_end`.
fn shown_node(shown: &Shown, child: Option<Node>, string_end: usize) -> Option<Node> {
    match shown {
        Shown::Nothing => None,
        Shown::Node(node) => Some(node.clone()),
        Shown::String(start) => Some(Node::String {
            start: *start,
            end: string_end,
        }),
        Shown::Container => child,
    }
}

fn key_bytes(bytes: &AppendOnlyBytes, start: usize, end: usize) -> &[u8] {
    bytes.as_bytes().get(start..end).unwrap_or_default()
}

/// The entry of `frame` whose key is `key`.
fn find_key(bytes: &AppendOnlyBytes, frame: &OpenContainer, key: &[u8]) -> Option<Arc<Entry>> {
    if frame.keys.as_ref().is_some_and(|keys| !keys.contains(key)) {
        return None;
    }
    let mut at = frame.chain.last.as_ref();
    while let Some(entry) = at {
        if key_bytes(bytes, entry.key_start, entry.key_end) == key {
            return Some(Arc::clone(entry));
        }
        at = entry.prev.as_ref();
    }
    None
}
