//! What the incremental parser tells the keeper of the partial value.
//!
//! The parser ([`Reader`](super::parser::Reader)) decides what the partial arguments show;
//! a sink keeps them. One reader feeds either sink: [`Tracked`](super::tracked::Tracked)
//! keeps a `serde_json` value in place and lists the changes of each delta (what providers
//! forward in `toolcall_delta` events), [`VersionSink`](super::versions::VersionSink) logs
//! what the reader shows, so that every prefix of the log is a version.
//!
//! The reader opens a *slot* where a value starts (a member of the innermost open object, or
//! the next item of the innermost open array), shows a value in it, and ends it when the
//! value ends. A container shown in a slot becomes the innermost open container until it
//! closes.

use super::scalar::Scalar;

/// Where the text of a key is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum KeyText {
    /// `raw[start..end]` of the raw text: a key without escapes, read in place.
    InPlace { start: usize, end: usize },
    /// The key buffer from `start` on.
    Decoded { start: usize },
}

pub(super) trait Sink {
    /// What a slot showed, set aside: the old value of a duplicate key while a number's
    /// preview hides it.
    type Saved;

    /// Whether the sink reads strings in place: a key or string is then a range of the raw
    /// text until its first escape, and the reader copies nothing for it. Such a sink is
    /// told where a shown string starts ([`show_string_in_place`](Self::show_string_in_place)),
    /// when it meets an escape ([`string_escapes`](Self::string_escapes)) and where it ends
    /// ([`end_string`](Self::end_string)); a key comes as [`KeyText::InPlace`] until it has
    /// an escape. Other sinks get every string decoded.
    const READS_IN_PLACE: bool = false;

    /// A delta starts; `open_string` says whether a shown string is open across it.
    fn begin_delta(&mut self, open_string: bool);

    /// Where the open string's text may be decoded directly, instead of through
    /// [`append`](Self::append).
    fn string_buffer(&mut self) -> Option<&mut String> {
        None
    }

    /// A key starts: returns where it starts in [`key_buffer`](Self::key_buffer).
    fn start_key(&mut self) -> usize;

    /// Where the reader decodes keys; nothing else writes to it between the start of a key
    /// and the value it names.
    fn key_buffer(&mut self) -> &mut String;

    /// Open the slot of a member in the innermost open object, named `key` (`raw` is the raw
    /// text read so far).
    fn enter_key(&mut self, key: KeyText, raw: &str);

    /// Open the slot of the next item of the innermost open array.
    fn enter_index(&mut self);

    /// The open slot's number or literal has ended.
    fn end_value(&mut self);

    /// The open slot's string has ended, at `raw_end` in the raw text (its closing quote).
    fn end_string(&mut self, _raw_end: usize) {
        self.end_value();
    }

    /// The innermost open container has ended, and with it the slot that shows it.
    fn close(&mut self);

    /// The slot shows an empty string, which [`append`](Self::append) extends.
    fn show_string(&mut self);

    /// Decoded text of the slot's open string.
    fn append(&mut self, text: &str);

    /// The slot shows the string whose text starts at `start` in the raw text, read in place
    /// (only if [`READS_IN_PLACE`](Self::READS_IN_PLACE)).
    fn show_string_in_place(&mut self, _start: usize) {
        self.show_string();
    }

    /// The slot shows the whole string `start..end` of the raw text, which has no escapes
    /// (only if [`READS_IN_PLACE`](Self::READS_IN_PLACE)).
    fn show_whole_string_in_place(&mut self, start: usize, end: usize) {
        self.show_string_in_place(start);
        self.end_string(end);
    }

    /// The open string read in place has met an escape: `so_far` is its text until then, and
    /// the rest comes decoded, into the [`string_buffer`](Self::string_buffer) or through
    /// [`append`](Self::append) (only if [`READS_IN_PLACE`](Self::READS_IN_PLACE)).
    fn string_escapes(&mut self, so_far: &str) {
        self.append(so_far);
    }

    /// The slot shows an empty object or array, which becomes the innermost open container.
    fn show_container(&mut self, object: bool);

    /// The slot shows `value` (a number or literal); returns what it showed before, or the
    /// old value of its key.
    fn show_scalar(&mut self, value: Scalar) -> Option<Self::Saved>;

    /// The slot shows a value it showed before.
    fn restore(&mut self, saved: Self::Saved);

    /// The slot shows nothing (a number that turned out not to be one).
    fn withdraw(&mut self);
}
