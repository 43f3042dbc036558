//! The `build_request` op.

use serde_json::{Map, Value};

use crate::protocol::Prepared;

pub(crate) fn prepare(_request: &Map<String, Value>) -> Result<Prepared, String> {
    Err("build_request is not implemented yet".into())
}
