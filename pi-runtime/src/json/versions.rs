//! Every version of the partial arguments (SPEC §6.2, §11.3 item 1): after each delta, a
//! version that later deltas never change, at the cost of the delta, not of the value.
//!
//! The versions of one stream live in one store: a vector of nodes that are never changed
//! once written, and one string of decoded text. A container is a chain of entries from its
//! last one backwards, so adding a member writes one entry and the containers above it, and a
//! version is a root node. Strings and keys are ranges of the text. The string that is
//! streaming is the last text written, and its node runs to the end of the text its version
//! saw, so a delta that only extends it writes no node at all.

use std::collections::HashSet;
use std::fmt;

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value};

use super::parser::{PartialJsonError, Reader};
use super::scalar::Scalar;
use super::sink::Sink;
use super::string::push_str;

type NodeId = usize;

/// No node: the end of an entry chain.
const NONE: NodeId = NodeId::MAX;
/// The end of the open string: the end of the text its version saw.
const OPEN: usize = usize::MAX;
/// An object with this many members keeps a set of its keys, so that looking for a
/// duplicate key does not walk all of them.
const INDEXED_WIDTH: usize = 16;

#[derive(Debug)]
enum Node {
    Scalar(Scalar),
    String {
        start: usize,
        end: usize,
    },
    Array {
        last: NodeId,
        len: usize,
    },
    Object {
        last: NodeId,
        len: usize,
    },
    /// A member (with its key) or an item of a container, after the entry `prev`.
    Entry {
        key_start: usize,
        key_end: usize,
        value: NodeId,
        prev: NodeId,
    },
}

/// The nodes and text of every version of a stream.
#[derive(Debug)]
struct Store {
    nodes: Vec<Node>,
    text: String,
}

impl Store {
    fn write(&mut self, node: Node) -> NodeId {
        if self.nodes.len() == self.nodes.capacity() {
            // Versions write nodes quickly: grow fourfold, copying less often.
            self.nodes.reserve(self.nodes.len() * 3);
        }
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    fn node(&self, id: NodeId) -> &Node {
        self.nodes.get(id).unwrap_or(&Node::Scalar(Scalar::Null))
    }

    fn key(&self, start: usize, end: usize) -> &str {
        self.text.get(start..end).unwrap_or_default()
    }

    fn entry(&self, id: NodeId) -> Option<ChainEntry> {
        match *self.node(id) {
            Node::Entry {
                key_start,
                key_end,
                value,
                prev,
            } => Some(ChainEntry {
                id,
                key_start,
                key_end,
                value,
                prev,
            }),
            _ => None,
        }
    }

    /// The entries of a container from `last` backwards.
    fn chain(&self, last: NodeId) -> impl Iterator<Item = ChainEntry> + '_ {
        std::iter::successors(self.entry(last), |entry| self.entry(entry.prev))
    }
}

/// An entry of a chain, read out of its node.
#[derive(Debug, Clone, Copy)]
struct ChainEntry {
    id: NodeId,
    key_start: usize,
    key_end: usize,
    value: NodeId,
    prev: NodeId,
}

/// Streams one call's argument text into versions of its partial arguments, each kept as it
/// was whatever comes next (pi's `ToolCallArgumentsStream` and its snapshots).
///
/// It reads like [`PartialJsonParser`](super::PartialJsonParser): each byte once, the same
/// value for the same text however it was cut. Where the parser keeps one value current in
/// place, [`push`](Self::push) returns an [`ArgumentsVersion`] that [`view`](Self::view)
/// reads for as long as the stream lives. A version costs the delta and the depth of what it
/// changed, never the size of the value: versions share every part a delta did not touch,
/// including the text of a string that grew, and the stream keeps what they share until it
/// is dropped.
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
    root: NodeId,
    /// How much decoded text the version saw: where its open string ends.
    text_len: usize,
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
        // An empty delta changes nothing (providers do send them).
        if !delta.is_empty() {
            self.reader.push(delta);
        }
        self.reader.sink.version()
    }

    /// The partial arguments of the text read so far.
    pub fn version(&mut self) -> ArgumentsVersion {
        self.reader.sink.version()
    }

    /// Read a version this stream made (always an object).
    pub fn view(&self, version: ArgumentsVersion) -> ArgumentsView<'_> {
        ArgumentsView {
            store: &self.reader.sink.store,
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
    version: ArgumentsVersion,
}

impl<'a> ArgumentsView<'a> {
    /// The version as a `serde_json` value (a full copy).
    pub fn to_value(&self) -> Value {
        self.value_of(self.version.root)
    }

    fn string(&self, start: usize, end: usize) -> &'a str {
        let end = if end == OPEN {
            self.version.text_len
        } else {
            end
        };
        self.store.text.get(start..end).unwrap_or_default()
    }

    /// The entries of a container, first to last: `(key, value)`.
    fn entries(&self, last: NodeId, len: usize) -> Vec<(&'a str, NodeId)> {
        let store = self.store;
        let mut entries = Vec::with_capacity(len);
        entries.extend(
            store
                .chain(last)
                .map(|entry| (store.key(entry.key_start, entry.key_end), entry.value)),
        );
        entries.reverse();
        entries
    }

    fn value_of(&self, id: NodeId) -> Value {
        match *self.store.node(id) {
            Node::Entry { .. } => Value::Null,
            Node::Scalar(scalar) => scalar.to_value(),
            Node::String { start, end } => Value::String(self.string(start, end).to_owned()),
            Node::Array { last, len } => Value::Array(
                self.entries(last, len)
                    .into_iter()
                    .map(|(_, item)| self.value_of(item))
                    .collect(),
            ),
            Node::Object { last, len } => Value::Object(
                self.entries(last, len)
                    .into_iter()
                    .map(|(key, member)| (key.to_owned(), self.value_of(member)))
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
        NodeView {
            view: self,
            id: self.version.root,
        }
        .serialize(serializer)
    }
}

/// One node of a view, serialized in place.
struct NodeView<'v, 'a> {
    view: &'v ArgumentsView<'a>,
    id: NodeId,
}

impl Serialize for NodeView<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let view = self.view;
        let node = |id| NodeView { view, id };
        match *view.store.node(self.id) {
            Node::Entry { .. } => serializer.serialize_unit(),
            Node::Scalar(scalar) => scalar.serialize(serializer),
            Node::String { start, end } => serializer.serialize_str(view.string(start, end)),
            Node::Array { last, len } => {
                let mut seq = serializer.serialize_seq(Some(len))?;
                for (_, item) in view.entries(last, len) {
                    seq.serialize_element(&node(item))?;
                }
                seq.end()
            }
            Node::Object { last, len } => {
                let mut map = serializer.serialize_map(Some(len))?;
                for (key, member) in view.entries(last, len) {
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
    /// The open containers.
    frames: OpenContainers,
    /// The root of the last version, while nothing but the open string changed since.
    root: Option<NodeId>,
}

/// The open containers: the arguments object and the containers open inside it.
#[derive(Debug)]
struct OpenContainers {
    arguments: OpenContainer,
    nested: Vec<OpenContainer>,
}

impl OpenContainers {
    fn innermost(&self) -> &OpenContainer {
        self.nested.last().unwrap_or(&self.arguments)
    }

    fn innermost_mut(&mut self) -> &mut OpenContainer {
        self.nested.last_mut().unwrap_or(&mut self.arguments)
    }

    fn inner_to_outer(&self) -> impl Iterator<Item = &OpenContainer> {
        self.nested.iter().rev().chain([&self.arguments])
    }
}

#[derive(Debug)]
struct OpenContainer {
    object: bool,
    /// The last finished entry.
    last: NodeId,
    len: usize,
    slot: Option<OpenSlot>,
    /// The keys of a wide object.
    keys: Option<HashSet<Box<str>>>,
    /// A bit for each key of a narrower one ([`key_bit`]): a key whose bit is clear is new,
    /// so most keys are never compared with the others.
    key_bits: u64,
}

#[derive(Debug)]
struct OpenSlot {
    key_start: usize,
    key_end: usize,
    key_bit: u64,
    /// The entry that already has this key: what the slot shows replaces its value.
    duplicate: NodeId,
    shown: Shown,
}

#[derive(Debug, Clone, Copy)]
enum Shown {
    Nothing,
    Node(NodeId),
    /// The open string, from this byte to the end of the text.
    String(usize),
    /// The next open container.
    Container,
}

impl OpenContainer {
    fn new(object: bool) -> Self {
        OpenContainer {
            object,
            last: NONE,
            len: 0,
            slot: None,
            keys: None,
            key_bits: 0,
        }
    }

    fn node(&self, last: NodeId, len: usize) -> Node {
        if self.object {
            Node::Object { last, len }
        } else {
            Node::Array { last, len }
        }
    }

    /// The entry chain with the slot showing `value`: `(last, len)`.
    #[inline]
    fn with_slot(&self, store: &mut Store, slot: &OpenSlot, value: NodeId) -> (NodeId, usize) {
        if slot.duplicate != NONE {
            return self.with_duplicate(store, slot, value);
        }
        let entry = Node::Entry {
            key_start: slot.key_start,
            key_end: slot.key_end,
            value,
            prev: self.last,
        };
        (store.write(entry), self.len + 1)
    }

    /// [`with_slot`](Self::with_slot) for a duplicate key, which keeps its first position
    /// (SPEC §0.1): the entries after it are written again.
    #[inline(never)]
    fn with_duplicate(&self, store: &mut Store, slot: &OpenSlot, value: NodeId) -> (NodeId, usize) {
        let after: Vec<ChainEntry> = store
            .chain(self.last)
            .take_while(|entry| entry.id != slot.duplicate)
            .collect();
        let prev = store.entry(slot.duplicate).map_or(NONE, |entry| entry.prev);
        let mut last = store.write(Node::Entry {
            key_start: slot.key_start,
            key_end: slot.key_end,
            value,
            prev,
        });
        for entry in after.into_iter().rev() {
            last = store.write(Node::Entry {
                key_start: entry.key_start,
                key_end: entry.key_end,
                value: entry.value,
                prev: last,
            });
        }
        (last, self.len)
    }

    /// The entry whose key is `key` (whose bit is `bit`), or [`NONE`].
    fn find_key(&self, store: &Store, key: &str, bit: u64) -> NodeId {
        let surely_new = match &self.keys {
            Some(keys) => !keys.contains(key),
            None => self.key_bits & bit == 0,
        };
        if surely_new {
            return NONE;
        }
        store
            .chain(self.last)
            // Bytes, length first: `Store::key` checks character boundaries, which this
            // walk does not need and which costs 2% of a stream's instructions.
            .find(|entry| {
                entry.key_end - entry.key_start == key.len()
                    && store.text.as_bytes().get(entry.key_start..entry.key_end)
                        == Some(key.as_bytes())
            })
            .map_or(NONE, |entry| entry.id)
    }
}

impl VersionSink {
    fn new() -> Self {
        VersionSink {
            // Room for a small call's versions without growing.
            store: Store {
                nodes: Vec::with_capacity(16),
                text: String::with_capacity(64),
            },
            frames: OpenContainers {
                arguments: OpenContainer::new(true),
                nested: Vec::new(),
            },
            root: None,
        }
    }

    fn version(&mut self) -> ArgumentsVersion {
        let root = match self.root {
            Some(root) => root,
            None => {
                let root = self.build();
                self.root = Some(root);
                root
            }
        };
        ArgumentsVersion {
            root,
            text_len: self.store.text.len(),
        }
    }

    /// Write the open containers as they show now, innermost first; returns the root.
    /// (Out of line: most versions reuse the last root.)
    #[inline(never)]
    fn build(&mut self) -> NodeId {
        let store = &mut self.store;
        let mut child = NONE;
        for frame in self.frames.inner_to_outer() {
            let (last, len) = match &frame.slot {
                Some(slot) => match shown_node(store, slot.shown, child, OPEN) {
                    Some(value) => frame.with_slot(store, slot, value),
                    None => (frame.last, frame.len),
                },
                None => (frame.last, frame.len),
            };
            child = store.write(frame.node(last, len));
        }
        child
    }

    fn show(&mut self, shown: Shown) {
        self.root = None;
        if let Some(slot) = &mut self.frames.innermost_mut().slot {
            slot.shown = shown;
        }
    }

    /// End the open slot of the innermost container, with what it shows.
    fn finish_slot(&mut self, child: NodeId) {
        let store = &mut self.store;
        let frame = self.frames.innermost_mut();
        let Some(slot) = frame.slot.take() else {
            return;
        };
        let end = store.text.len();
        let Some(value) = shown_node(store, slot.shown, child, end) else {
            return;
        };
        (frame.last, frame.len) = frame.with_slot(store, &slot, value);
        if !frame.object || slot.duplicate != NONE {
            return;
        }
        frame.key_bits |= slot.key_bit;
        match &mut frame.keys {
            Some(keys) => {
                keys.insert(store.key(slot.key_start, slot.key_end).into());
            }
            None if frame.len >= INDEXED_WIDTH => {
                let keys = store
                    .chain(frame.last)
                    .map(|entry| store.key(entry.key_start, entry.key_end).into())
                    .collect();
                frame.keys = Some(keys);
            }
            None => {}
        }
    }
}

impl Sink for VersionSink {
    type Saved = NodeId;

    fn begin_delta(&mut self, _open_string: bool) {}

    fn string_buffer(&mut self) -> Option<&mut String> {
        Some(&mut self.store.text)
    }

    fn array_len(&mut self) -> usize {
        self.frames.innermost().len
    }

    fn start_key(&mut self) -> usize {
        self.store.text.len()
    }

    fn key_buffer(&mut self) -> &mut String {
        &mut self.store.text
    }

    fn enter_key(&mut self, key_start: usize) {
        let store = &self.store;
        let key_end = store.text.len();
        let frame = self.frames.innermost_mut();
        let key = store.key(key_start, key_end);
        let bit = key_bit(key);
        let duplicate = frame.find_key(store, key, bit);
        frame.slot = Some(OpenSlot {
            key_start,
            key_end,
            key_bit: bit,
            duplicate,
            shown: Shown::Nothing,
        });
    }

    fn enter_index(&mut self, _index: usize) {
        self.frames.innermost_mut().slot = Some(OpenSlot {
            key_start: 0,
            key_end: 0,
            key_bit: 0,
            duplicate: NONE,
            shown: Shown::Nothing,
        });
    }

    fn leave(&mut self) {
        self.root = None;
        let closing = self.frames.innermost().slot.is_none();
        match self.frames.nested.pop_if(|_| closing) {
            Some(frame) => {
                let node = self.store.write(frame.node(frame.last, frame.len));
                self.finish_slot(node);
            }
            None => self.finish_slot(NONE),
        }
    }

    fn show_string(&mut self) {
        let start = self.store.text.len();
        self.show(Shown::String(start));
    }

    fn append(&mut self, text: &str) {
        push_str(&mut self.store.text, text);
    }

    fn show_container(&mut self, object: bool) {
        self.show(Shown::Container);
        self.frames.nested.push(OpenContainer::new(object));
    }

    fn show_scalar(&mut self, value: Scalar) -> Option<NodeId> {
        let node = self.store.write(Node::Scalar(value));
        let slot = self.frames.innermost().slot.as_ref()?;
        let previous = match slot.shown {
            Shown::Node(id) => Some(id),
            _ => match *self.store.node(slot.duplicate) {
                Node::Entry { value, .. } => Some(value),
                _ => None,
            },
        };
        self.show(Shown::Node(node));
        previous
    }

    fn restore(&mut self, saved: NodeId) {
        self.show(Shown::Node(saved));
    }

    fn withdraw(&mut self) {
        self.show(Shown::Nothing);
    }
}

/// One of 64 bits, chosen by a hash of `key`.
fn key_bit(key: &str) -> u64 {
    let hash = key.bytes().fold(0u64, |hash, byte| {
        (hash.rotate_left(5) ^ u64::from(byte)).wrapping_mul(0x517c_c1b7_2722_0a95)
    });
    1 << (hash >> 58)
}

/// The node a slot shows: `child` for a container, a string up to `string_end`.
fn shown_node(store: &mut Store, shown: Shown, child: NodeId, string_end: usize) -> Option<NodeId> {
    match shown {
        Shown::Nothing => None,
        Shown::Node(id) => Some(id),
        Shown::String(start) => Some(store.write(Node::String {
            start,
            end: string_end,
        })),
        Shown::Container => (child != NONE).then_some(child),
    }
}
