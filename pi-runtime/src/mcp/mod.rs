//! MCP both ways: serve a [`ToolSet`](crate::ToolSet) to any MCP client, and give an MCP
//! server's tools to the agent. Behind the `mcp` cargo feature.
//!
//! Built on [rmcp](https://docs.rs/rmcp), the official Rust SDK; nothing here speaks the
//! protocol by hand.
//!
//! - **Server** ([`McpServer`]): `tools/list` gives each tool's name, description, input schema
//!   (the one the model sees), annotations and, for a `Json<T>` tool, an output schema;
//!   `tools/call` runs the agent loop's own pipeline (prepare, coerce, validate, execute), so an
//!   MCP client gets exactly the error texts a model gets in the loop. Over stdio or streamable
//!   HTTP.
//! - **Client** ([`McpClient`]): connects to a server over stdio (a child process) or streamable
//!   HTTP and turns each of its tools into an [`AgentTool`](crate::AgentTool) exactly as pi's
//!   MCP extension does (SPEC §12): [`tool_definitions`] for the definitions,
//!   [`convert_result`] for what the model sees of a result.

mod client;
mod content;
mod http;
mod naming;
mod schema;
mod server;

use thiserror::Error;

use crate::tool::RegistryError;

pub use client::{DEFAULT_TIMEOUT, McpClient, McpClientBuilder};
pub use content::{
    MCP_OUTPUT_MAX_BYTES, OutputSaver, ResultOptions, TempFileSaver, convert_result, result_to_json,
};
pub use schema::{McpToolDefinition, tool_definitions};
pub use server::{McpHttpServer, McpServer, ToolHints};

/// Everything that can go wrong between us and an MCP peer.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum McpError {
    /// A `tools/list` entry is not an object with a string `name` and an object `inputSchema`
    /// (pi's client rejects the whole list).
    #[error("Invalid entry in MCP tools/list result")]
    InvalidToolList,
    /// A `tools/call` result is not an object, or its `content` is not an array.
    #[error("Invalid MCP tools/call result")]
    InvalidResult,
    /// The tools cannot be served: two share a name, or a schema does not compile.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// A connection could not be made or broke (spawning a server, binding a port, the
    /// initialization handshake).
    #[error("MCP connection failed: {0}")]
    Connect(String),
}
