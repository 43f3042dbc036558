//! Deserializing validated arguments into a tool's parameter type, with the
//! failing place reported in the validation format.

use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_path_to_error::Segment as PathSegment;

use super::ValidationError;
use super::format::{Issue, Segment, validation_failed};

pub(super) fn deserialize<T: DeserializeOwned>(
    tool_name: &str,
    arguments: &Value,
) -> Result<T, ValidationError> {
    serde_path_to_error::deserialize(arguments).map_err(|error| {
        let location: Vec<Segment<'_>> = error
            .path()
            .iter()
            .filter_map(|segment| match segment {
                PathSegment::Seq { index } => Some(Segment::Index(*index)),
                PathSegment::Map { key } => Some(Segment::Key(key)),
                PathSegment::Enum { variant } => Some(Segment::Key(variant)),
                // serde could not name the place; the path stops at what is known.
                PathSegment::Unknown => None,
            })
            .collect();
        let issue = Issue::new(&location, error.inner().to_string());
        ValidationError::new(validation_failed(tool_name, &[issue], arguments))
    })
}
