//! The `validate` op.

use serde_json::{Map, Value};

use crate::protocol::Prepared;

pub(crate) fn prepare(_request: &Map<String, Value>) -> Result<Prepared, String> {
    Err("validate is not implemented yet".into())
}
