//! The sink behind [`PartialJsonParser`](super::PartialJsonParser): one `serde_json` value
//! kept current in place, and the list of changes each delta made to it.

use serde_json::{Map, Value};

use super::changes::{self, ArgumentChange, PathSegment, walk};
use super::scalar::Scalar;
use super::sink::{KeyText, Sink};

#[derive(Debug)]
pub(super) struct Tracked {
    pub(super) value: Value,
    pub(super) changes: Vec<ArgumentChange>,
    /// The path to the open slot.
    path: Vec<PathSegment>,
    /// The last key read.
    key: String,
    /// Index in `changes` of the open string's latest change, while it is the last one.
    string_change: Option<usize>,
    /// The open string's `Append` from the previous delta, reused for the next one so that a
    /// long string streams without allocating a path per delta.
    spare: Option<ArgumentChange>,
}

impl Tracked {
    pub(super) fn new() -> Self {
        Tracked {
            value: Value::Object(Map::new()),
            changes: Vec::new(),
            path: Vec::new(),
            key: String::new(),
            string_change: None,
            spare: None,
        }
    }

    /// Put `value` in the open slot and report it; returns what the slot held.
    fn place(&mut self, value: Value) -> Option<Value> {
        let (segment, parent) = self.path.split_last()?;
        let container = walk(&mut self.value, parent)?;
        let previous = match (container, segment) {
            (Value::Object(members), PathSegment::Key(key)) => {
                members.insert(key.clone(), value.clone())
            }
            (container, segment) => {
                changes::set(container, segment, value.clone());
                None
            }
        };
        self.changes.push(ArgumentChange::Set {
            path: self.path.clone(),
            value,
        });
        previous
    }
}

impl Sink for Tracked {
    type Saved = Value;

    fn begin_delta(&mut self, open_string: bool) {
        let latest = self.changes.len().checked_sub(1);
        self.spare = match self.changes.pop() {
            Some(change @ ArgumentChange::Append { .. })
                if open_string && self.string_change == latest =>
            {
                Some(change)
            }
            _ => None,
        };
        self.changes.clear();
        self.string_change = None;
    }

    fn start_key(&mut self) -> usize {
        self.key.clear();
        0
    }

    fn key_buffer(&mut self) -> &mut String {
        &mut self.key
    }

    fn enter_key(&mut self, key: KeyText, raw: &str) {
        let key = match key {
            KeyText::InPlace { start, end } => raw.get(start..end),
            KeyText::Decoded { start } => self.key.get(start..),
        };
        self.path
            .push(PathSegment::Key(key.unwrap_or_default().to_owned()));
    }

    fn enter_index(&mut self) {
        let index = walk(&mut self.value, &self.path)
            .and_then(|container| container.as_array())
            .map_or(0, Vec::len);
        self.path.push(PathSegment::Index(index));
    }

    fn end_value(&mut self) {
        // The spare belongs to the open string only.
        self.spare = None;
        self.path.pop();
    }

    fn close(&mut self) {
        self.end_value();
    }

    fn show_string(&mut self) {
        self.place(Value::String(String::new()));
        self.string_change = self.changes.len().checked_sub(1);
    }

    fn append(&mut self, text: &str) {
        if let Some(Value::String(shown)) = walk(&mut self.value, &self.path) {
            shown.push_str(text);
        }
        let latest = self
            .string_change
            .filter(|&index| index + 1 == self.changes.len());
        match latest.and_then(|index| self.changes.get_mut(index)) {
            Some(ArgumentChange::Set {
                value: Value::String(shown),
                ..
            })
            | Some(ArgumentChange::Append { text: shown, .. }) => shown.push_str(text),
            _ => {
                let change = match self.spare.take() {
                    Some(ArgumentChange::Append {
                        path,
                        text: mut spare,
                    }) => {
                        spare.clear();
                        spare.push_str(text);
                        ArgumentChange::Append { path, text: spare }
                    }
                    _ => ArgumentChange::Append {
                        path: self.path.clone(),
                        text: text.to_owned(),
                    },
                };
                self.string_change = Some(self.changes.len());
                self.changes.push(change);
            }
        }
    }

    fn show_container(&mut self, object: bool) {
        self.place(if object {
            Value::Object(Map::new())
        } else {
            Value::Array(Vec::new())
        });
    }

    fn show_scalar(&mut self, value: Scalar) -> Option<Value> {
        self.place(value.to_value())
    }

    fn restore(&mut self, saved: Value) {
        self.place(saved);
    }

    fn withdraw(&mut self) {
        if let Some((segment, parent)) = self.path.split_last()
            && let Some(container) = walk(&mut self.value, parent)
        {
            changes::remove(container, segment);
        }
        self.changes.push(ArgumentChange::Remove {
            path: self.path.clone(),
        });
    }
}
