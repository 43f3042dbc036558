//! The `partial_json` and `partial_json_stream` ops.

use serde_json::{Map, Value};

use crate::protocol::Prepared;

pub(crate) fn prepare(_request: &Map<String, Value>) -> Result<Prepared, String> {
    Err("partial_json is not implemented yet".into())
}

pub(crate) fn prepare_stream(_request: &Map<String, Value>) -> Result<Prepared, String> {
    Err("partial_json_stream is not implemented yet".into())
}
