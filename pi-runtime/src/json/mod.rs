//! Streaming tool-call arguments (SPEC §6): the incremental partial-JSON parser and the
//! final parse of a finished call.
//!
//! INTERFACE STUB: the streaming-parser work replaces the bodies (the stub re-parses and is
//! quadratic); the signatures are what providers call.

use serde_json::Value;

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
#[derive(Debug, Clone, PartialEq)]
pub enum ArgumentChange {
    /// Insert or replace the value at `path` (a new key goes last; an index equal to the
    /// array's length appends).
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
    /// Remove the member or item at `path`.
    Remove {
        /// Where.
        path: Vec<PathSegment>,
    },
}

/// The incremental parser of one call's argument text.
#[derive(Debug, Default)]
pub struct PartialJsonParser {
    text: String,
    value: Value,
    changes: Vec<ArgumentChange>,
}

impl PartialJsonParser {
    /// A parser that has read nothing (its value is `{}`).
    pub fn new() -> Self {
        PartialJsonParser {
            text: String::new(),
            value: Value::Object(serde_json::Map::new()),
            changes: Vec::new(),
        }
    }

    /// Read one delta; returns the changes it made to [`value`](Self::value).
    pub fn push(&mut self, delta: &str) -> &[ArgumentChange] {
        self.text.push_str(delta);
        self.value = serde_json::from_str(&self.text)
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| self.value.clone());
        self.changes.clear();
        self.changes.push(ArgumentChange::Set {
            path: Vec::new(),
            value: self.value.clone(),
        });
        &self.changes
    }

    /// The partial arguments of SPEC §6.2 for the text read so far (always an object).
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The raw text read so far.
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// Apply changes produced by [`PartialJsonParser::push`] to a copy of the value.
pub fn apply_changes(target: &mut Value, changes: &[ArgumentChange]) {
    for change in changes {
        if let ArgumentChange::Set { path, value } = change
            && path.is_empty()
        {
            *target = value.clone();
        }
    }
}

/// The partial arguments of SPEC §6.2 for a whole text.
pub fn parse_partial(text: &str) -> Value {
    let mut parser = PartialJsonParser::new();
    parser.push(text);
    parser.value().clone()
}

/// The final parse of a finished call (SPEC §6.4): `(arguments, argumentsError)`.
pub fn parse_tool_call_arguments(text: &str) -> (Value, Option<String>) {
    if text.trim().is_empty() {
        return (Value::Object(serde_json::Map::new()), None);
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value) if value.is_object() => (value, None),
        Ok(_) => (
            Value::Object(serde_json::Map::new()),
            Some(format!(
                "Tool arguments must be a JSON object\n\nReceived arguments:\n{text}"
            )),
        ),
        Err(error) => (
            Value::Object(serde_json::Map::new()),
            Some(format!("{error}\n\nReceived arguments:\n{text}")),
        ),
    }
}
