//! The partial arguments the parser shows: a `serde_json` value changed in place, and the path
//! from it to the slot being filled.
//!
//! The parser ([`PartialJsonParser`](super::PartialJsonParser)) decides what shows; this
//! module only writes it. The path assumes the value is as the parser left it: a caller that
//! changes it between deltas may see later writes land elsewhere or be skipped (a step that
//! leads nowhere), but nothing here panics.

use serde_json::Value;

/// One step from a container to one of its members or items.
#[derive(Debug)]
enum Step {
    Key {
        key: String,
        /// The member is the object's last: a new key's member is from when it first shows
        /// until its value ends, since nothing else joins the object meanwhile. It is then
        /// found without hashing or comparing its key (measured: 10% of the `partial_json`
        /// bench, whose path is two keys deep). A duplicate key's member is found by its key.
        last: bool,
    },
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
        self.path.push(Step::Key {
            key: key.to_owned(),
            last: false,
        });
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
    /// (the first position, the last value, as `JSON.parse` does).
    pub(super) fn show(&mut self, value: Value) -> Option<Value> {
        let (step, parent) = self.path.split_last_mut()?;
        match (walk(&mut self.value, parent)?, step) {
            (Value::Object(members), Step::Key { key, last }) => {
                let slot = if *last {
                    members.values_mut().next_back()
                } else {
                    members.get_mut(key.as_str())
                };
                match slot {
                    Some(slot) => Some(std::mem::replace(slot, value)),
                    None => {
                        *last = true;
                        members.insert(key.clone(), value)
                    }
                }
            }
            (Value::Array(items), &mut Step::Index(index)) => {
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
        let Some((step, parent)) = self.path.split_last_mut() else {
            return;
        };
        match (walk(&mut self.value, parent), step) {
            (Some(Value::Object(members)), Step::Key { key, last }) => {
                *last = false;
                members.shift_remove(key.as_str());
            }
            (Some(Value::Array(items)), &mut Step::Index(index)) if index < items.len() => {
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
            (Value::Object(members), Step::Key { last: true, .. }) => {
                members.values_mut().next_back()?
            }
            (Value::Object(members), Step::Key { key, .. }) => members.get_mut(key.as_str())?,
            (Value::Array(items), &Step::Index(index)) => items.get_mut(index)?,
            _ => return None,
        };
    }
    Some(value)
}
