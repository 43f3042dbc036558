//! The `parse_stream` op.

use serde_json::{Map, Value};
use tokio::runtime::Handle;

use crate::protocol::Prepared;

pub(crate) fn prepare(
    _request: &Map<String, Value>,
    _runtime: &Handle,
) -> Result<Prepared, String> {
    Err("parse_stream is not implemented yet".into())
}
