//! The `system_prompt_tools` op.

use serde_json::{Map, Value};

use crate::protocol::Prepared;

pub(crate) fn prepare(_request: &Map<String, Value>) -> Result<Prepared, String> {
    Err("system_prompt_tools is not implemented yet".into())
}
