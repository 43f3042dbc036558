//! The partial arguments the parser shows: a `serde_json` value changed in place, and the path
//! from it to the slot being filled.
//!
//! The parser ([`PartialJsonParser`](super::PartialJsonParser)) decides what shows; this
//! module only writes it. A write that does not fit the value (a path that leads nowhere,
//! which only a caller that changed the value between deltas can cause) is skipped: nothing
//! here panics.

use serde_json::{Map, Value};

/// One step from a container to one of its members or items.
#[derive(Debug)]
enum Step {
    Key(String),
    Index(usize),
}

/// The value being shown and where the parser writes next.
#[derive(Debug)]
pub(super) struct Shown {
    /// The arguments object. Between deltas it is `Null`: the caller owns the value, and
    /// [`push`](super::PartialJsonParser::push) swaps it in for the length of one delta.
    pub(super) value: Value,
    /// From `value` to the open slot: a step for each open container below the arguments
    /// object (the slot that shows it), and one for the string or token being read.
    path: Vec<Step>,
}

impl Shown {
    pub(super) fn new() -> Self {
        Shown {
            value: Value::Null,
            path: Vec::new(),
        }
    }

    /// Open the slot of member `key` in the innermost open object.
    pub(super) fn enter_key(&mut self, key: &str) {
        self.path.push(Step::Key(key.to_owned()));
    }

    /// Open the slot of the next item of the innermost open array.
    pub(super) fn enter_index(&mut self) {
        let index = walk(&mut self.value, &self.path)
            .and_then(|container| container.as_array())
            .map_or(0, Vec::len);
        self.path.push(Step::Index(index));
    }

    /// The open slot's value has ended (or its container closed): the slot is done.
    pub(super) fn leave(&mut self) {
        self.path.pop();
    }

    /// Make the open slot show `value`; returns what it showed before (for a member, the old
    /// value of a duplicate key). A new member goes last; a duplicate key keeps its position
    /// (the first position, the last value: SPEC §0.1).
    pub(super) fn show(&mut self, value: Value) -> Option<Value> {
        let (step, parent) = self.path.split_last()?;
        match (walk(&mut self.value, parent)?, step) {
            (Value::Object(members), Step::Key(key)) => match member(members, key) {
                Some(slot) => Some(std::mem::replace(slot, value)),
                None => members.insert(key.clone(), value),
            },
            (Value::Array(items), &Step::Index(index)) => {
                if index == items.len() {
                    items.push(value);
                    None
                } else {
                    Some(std::mem::replace(items.get_mut(index)?, value))
                }
            }
            _ => None,
        }
    }

    /// Make the open slot show nothing: a number that turned out not to be one. The other
    /// members keep their order.
    pub(super) fn withdraw(&mut self) {
        let Some((step, parent)) = self.path.split_last() else {
            return;
        };
        match (walk(&mut self.value, parent), step) {
            (Some(Value::Object(members)), Step::Key(key)) => {
                members.shift_remove(key);
            }
            (Some(Value::Array(items)), &Step::Index(index)) if index < items.len() => {
                items.remove(index);
            }
            _ => {}
        }
    }

    /// The string the open slot shows.
    pub(super) fn string(&mut self) -> Option<&mut String> {
        match walk(&mut self.value, &self.path)? {
            Value::String(string) => Some(string),
            _ => None,
        }
    }
}

/// The value at `path` below `value`, if every step exists.
fn walk<'v>(mut value: &'v mut Value, path: &[Step]) -> Option<&'v mut Value> {
    for step in path {
        value = match (value, step) {
            (Value::Object(members), Step::Key(key)) => member(members, key)?,
            (Value::Array(items), &Step::Index(index)) => items.get_mut(index)?,
            _ => return None,
        };
    }
    Some(value)
}

/// The member `key` of `members`.
fn member<'m>(members: &'m mut Map<String, Value>, key: &str) -> Option<&'m mut Value> {
    members.get_mut(key)
}
