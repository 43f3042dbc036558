//! One module per op of PROTOCOL.md.

pub(crate) mod build_request;
pub(crate) mod codemode;
pub(crate) mod codemode_run;
pub(crate) mod mcp;
pub(crate) mod parse_stream;
pub(crate) mod partial_json;
pub(crate) mod scenario;
pub(crate) mod system_prompt_tools;
pub(crate) mod tool_changes;
pub(crate) mod tool_search;
pub(crate) mod validate;
