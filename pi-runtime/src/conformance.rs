//! What only the conformance runner (`tests/conformance`) calls: pi's internal functions that
//! the conformance suite compares with pi's own one by one (code mode's declaration
//! renderers, loadout hook and source parser, the MCP tool definitions and result
//! conversion, the JSON repair of tool arguments), with the types they take and return.
//! Programs reach the same behaviour through the tools that use them.
//!
//! Not public API: names and signatures change without notice.

#[cfg(feature = "codemode")]
pub use crate::codemode::conformance::*;
pub use crate::json::finish::{parse_with_repair, repair};
#[cfg(feature = "mcp")]
pub use crate::mcp::content::{ResultOptions, convert_result};
#[cfg(feature = "mcp")]
pub use crate::mcp::schema::tool_definitions;
