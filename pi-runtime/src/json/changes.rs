//! The change list a parser reports per delta, and applying it to a consumer's copy.

use serde_json::{Map, Value};

/// One step of a path into the partial arguments.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PathSegment {
    /// An object key.
    Key(String),
    /// An array index.
    Index(usize),
}

/// One change to the partial arguments after a delta, so consumers can keep their own copy
/// current without copying the whole value per delta.
///
/// Paths are relative to the arguments object; an empty path is the object itself. Applying
/// every change list of a [`PartialJsonParser`](super::PartialJsonParser), in order, to a copy
/// that starts as `{}` reproduces the parser's value exactly (see [`apply_changes`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ArgumentChange {
    /// Insert or replace the value at `path` (a new key goes last; an existing key keeps its
    /// position; an index equal to the array's length appends).
    Set {
        /// Where.
        path: Vec<PathSegment>,
        /// The new value.
        value: Value,
    },
    /// Append text to the string at `path`.
    Append {
        /// Where.
        path: Vec<PathSegment>,
        /// The text.
        text: String,
    },
    /// Remove the member or item at `path` (what an unterminated number showed until it
    /// turned out not to be one, e.g. `1` before `1.`). Remaining members keep their order.
    Remove {
        /// Where.
        path: Vec<PathSegment>,
    },
}

/// Apply changes produced by [`PartialJsonParser::push`](super::PartialJsonParser::push) to a
/// copy of the value.
///
/// A change whose path does not lead to a matching container or string is skipped: the
/// function never panics, whatever list it is given.
///
/// ```
/// use pi_runtime::json::{PartialJsonParser, apply_changes};
/// use serde_json::json;
///
/// let mut parser = PartialJsonParser::new();
/// let mut copy = json!({});
/// for delta in [r#"{"path":"src/ma"#, r#"in.rs","limit":2"#, "0}"] {
///     apply_changes(&mut copy, parser.push(delta));
///     assert_eq!(&copy, parser.value());
/// }
/// assert_eq!(copy, json!({"path": "src/main.rs", "limit": 20}));
/// ```
pub fn apply_changes(target: &mut Value, changes: &[ArgumentChange]) {
    for change in changes {
        match change {
            ArgumentChange::Set { path, value } => match path.split_last() {
                None => *target = value.clone(),
                Some((last, parent)) => {
                    if let Some(parent) = walk(target, parent) {
                        set(parent, last, value.clone());
                    }
                }
            },
            ArgumentChange::Append { path, text } => {
                if let Some(Value::String(string)) = walk(target, path) {
                    string.push_str(text);
                }
            }
            ArgumentChange::Remove { path } => {
                if let Some((last, parent)) = path.split_last()
                    && let Some(parent) = walk(target, parent)
                {
                    remove(parent, last);
                }
            }
        }
    }
}

/// The value at `path` below `value`, if every step exists.
pub(crate) fn walk<'v>(mut value: &'v mut Value, path: &[PathSegment]) -> Option<&'v mut Value> {
    for segment in path {
        value = match (value, segment) {
            (Value::Object(members), PathSegment::Key(key)) => member_mut(members, key)?,
            (Value::Array(items), PathSegment::Index(index)) => items.get_mut(*index)?,
            _ => return None,
        };
    }
    Some(value)
}

/// The member `key`, found without hashing when it is the last one: the member that is
/// streaming almost always is, and hashing its key for every delta was the parser's main cost.
fn member_mut<'m>(members: &'m mut Map<String, Value>, key: &str) -> Option<&'m mut Value> {
    if members.keys().next_back().is_some_and(|last| last == key) {
        return members.values_mut().next_back();
    }
    members.get_mut(key)
}

/// Insert or replace the member or item `segment` of `container`.
pub(crate) fn set(container: &mut Value, segment: &PathSegment, value: Value) {
    match (container, segment) {
        // `insert` keeps an existing key where it is: last value, first position (SPEC §0.1).
        (Value::Object(members), PathSegment::Key(key)) => {
            members.insert(key.clone(), value);
        }
        (Value::Array(items), PathSegment::Index(index)) => {
            if *index == items.len() {
                items.push(value);
            } else if let Some(item) = items.get_mut(*index) {
                *item = value;
            }
        }
        _ => {}
    }
}

/// Remove the member or item `segment` of `container`, keeping the order of the rest.
pub(crate) fn remove(container: &mut Value, segment: &PathSegment) {
    match (container, segment) {
        (Value::Object(members), PathSegment::Key(key)) => {
            members.shift_remove(key);
        }
        (Value::Array(items), PathSegment::Index(index)) if *index < items.len() => {
            items.remove(*index);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(name: &str) -> PathSegment {
        PathSegment::Key(name.into())
    }

    #[test]
    fn changes_that_do_not_fit_are_skipped() {
        let mut value = json!({"a": [1], "s": "x"});
        apply_changes(
            &mut value,
            &[
                ArgumentChange::Set {
                    path: vec![key("a"), PathSegment::Index(5)],
                    value: json!(2),
                },
                ArgumentChange::Set {
                    path: vec![key("missing"), key("b")],
                    value: json!(2),
                },
                ArgumentChange::Append {
                    path: vec![key("a")],
                    text: "y".into(),
                },
                ArgumentChange::Remove {
                    path: vec![key("a"), PathSegment::Index(9)],
                },
                ArgumentChange::Remove { path: vec![] },
            ],
        );
        assert_eq!(value, json!({"a": [1], "s": "x"}));
    }

    #[test]
    fn sets_keep_positions_and_removes_keep_order() {
        let mut value = json!({"a": 1, "b": 2, "c": 3});
        apply_changes(
            &mut value,
            &[
                ArgumentChange::Set {
                    path: vec![key("a")],
                    value: json!("one"),
                },
                ArgumentChange::Remove {
                    path: vec![key("b")],
                },
                ArgumentChange::Set {
                    path: vec![key("d")],
                    value: json!([]),
                },
                ArgumentChange::Set {
                    path: vec![key("d"), PathSegment::Index(0)],
                    value: json!("s"),
                },
                ArgumentChange::Append {
                    path: vec![key("d"), PathSegment::Index(0)],
                    text: "tr".into(),
                },
            ],
        );
        assert_eq!(
            serde_json::to_string(&value).unwrap_or_default(),
            r#"{"a":"one","c":3,"d":["str"]}"#
        );
    }
}
