//! MCP both ways: serve a [`ToolSet`](crate::ToolSet) to any MCP client, and give an MCP
//! server's tools to the agent. Behind the `mcp` cargo feature.
//!
//! Built on [rmcp](https://docs.rs/rmcp), the official Rust SDK; nothing here speaks the
//! protocol by hand.
//!
//! - **Server** ([`McpServer`]): `tools/list` gives each tool's name, description, input schema
//!   (the one the model sees), annotations and, for a `Json<T>` tool, an output schema;
//!   `tools/call` runs the agent loop's own pipeline (prepare, coerce, validate, execute), so an
//!   MCP client gets exactly the error texts a model gets in the loop. What is served is the
//!   [`McpServer`]'s (tools, hooks, hints, each call's context made from the caller's
//!   [`Principal`](auth::Principal) with [`McpServer::with_context`]); how it is served is the
//!   transport's: stdio, or streamable HTTP as [`HttpServing`] say (authentication, sessions,
//!   connections, origins, a cluster).
//! - **Client** ([`McpClient`]): connects to a server over stdio (a child process) or streamable
//!   HTTP and turns each of its tools into an [`AgentTool`](crate::AgentTool) exactly as pi's
//!   MCP extension does: the same definitions, and the same text of a result for the model.
//!   What one server can make it hold is bounded: [`DEFAULT_MAX_TOOLS`] tools of at most
//!   [`DEFAULT_MAX_TOOL_SIZE`] bytes each, read from at most [`DEFAULT_MAX_PAGES`] pages a
//!   listing, one listing at a time however often the list changes, and messages of at most
//!   [`DEFAULT_MAX_MESSAGE_SIZE`] bytes (each configurable on [`McpClientBuilder`]).
//!
//! Both ways at once: a `#[tool]` served over streamable HTTP on loopback, and an agent that
//! uses it through the client, next to its own tools. The model (a faux one here) calls it
//! `mcp__<server>__<tool>`; invalid arguments get exactly the text the loop gives for a local
//! tool, checked before anything is sent.
//!
//! ```
//! use pi_runtime::agent::Agent;
//! use pi_runtime::mcp::{HttpServing, McpClient, McpServer};
//! use pi_runtime::provider::faux::{FauxModel, FauxResponse};
//! use pi_runtime::{Message, tool};
//! use serde_json::json;
//!
//! /// Add two numbers.
//! #[tool]
//! async fn add(a: f64, b: f64) -> String {
//!     (a + b).to_string()
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = McpServer::new((Add,))?;
//! let http = server.serve_http("127.0.0.1:0".parse()?, HttpServing::default()).await?;
//!
//! let calculator = McpClient::builder("calculator").http(http.url()).await?;
//! assert_eq!(calculator.tool_names(), ["mcp__calculator__add"]);
//!
//! let model = FauxModel::new()
//!     .respond(FauxResponse::tool_call("c1", "mcp__calculator__add", json!({"a": 1, "b": "x"})))
//!     .respond(FauxResponse::tool_call("c2", "mcp__calculator__add", json!({"a": 1, "b": "2"})))
//!     .respond(FauxResponse::text("3"));
//! let agent = Agent::builder().model(model).tools(calculator).build()?;
//! let texts: Vec<String> = agent
//!     .prompt("1 + 2?")
//!     .await?
//!     .iter()
//!     .filter_map(|m| match m {
//!         Message::ToolResult(r) => Some(r.text()),
//!         _ => None,
//!     })
//!     .collect();
//! assert_eq!(
//!     texts,
//!     [
//!         "Validation failed for tool \"mcp__calculator__add\":\n  - b: expected number, got string\n\n\
//!          Received arguments:\n{\n  \"a\": 1,\n  \"b\": \"x\"\n}",
//!         "3",
//!     ]
//! );
//! http.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod answers;
pub mod auth;
mod client;
mod connection;
pub(crate) mod content;
mod errors;
mod http;
mod http_server;
mod listing;
mod naming;
#[cfg(feature = "mcp-oauth")]
pub mod oauth;
pub(crate) mod schema;
mod server;
mod stdio;
mod tool;

use std::net::SocketAddr;

use thiserror::Error;

use crate::tool::RegistryError;

pub use answers::ClientAnswers;
pub use client::{
    DEFAULT_MAX_CALL_TIME, DEFAULT_MAX_MESSAGE_SIZE, DEFAULT_TIMEOUT, MAX_CALL_TIME_PER_TIMEOUT,
    McpClient, McpClientBuilder,
};
pub use content::MCP_OUTPUT_MAX_BYTES;
pub use http_server::{
    Cluster, DEFAULT_CONNECTION_IDLE_TIMEOUT, DEFAULT_MAX_REQUEST_BODY, HttpServing, McpHttpServer,
    SessionLimits,
};
pub use listing::{DEFAULT_MAX_PAGES, DEFAULT_MAX_TOOL_SIZE, DEFAULT_MAX_TOOLS};
pub use schema::ListedTool;
pub use server::{
    AskError, ClientFeature, ConnectedClient, McpServer, NoConnectedClient, Prompt, PromptMessage,
    PromptResult, PromptRole, ReadResult, Resource, ResourceTemplate, TemplateError,
};

/// The protocol's own types, as rmcp defines them, for the questions a served tool asks its
/// client ([`ConnectedClient`]) and the answers it gets.
pub mod model {
    // Sampling, roots and logging are deprecated by SEP-2577, a revision after 2026-07-28;
    // both revisions served here have them.
    #[allow(deprecated)]
    pub use rmcp::model::{
        ClientCapabilities, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult,
        ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
        InputRequest, InputRequests, InputResponses, ListRootsRequest, ListRootsResult,
        LoggingLevel, Root, SamplingMessage,
    };
}

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
    /// [`McpServer::serve_http`] was asked to serve an address other machines can reach with
    /// nothing to authenticate its clients.
    #[error(
        "refusing to serve MCP on {0} without authentication: other machines can reach it, and \
         anyone who does could call every tool. Give the server a token verifier \
         (HttpServing::with_authentication), bind a loopback address, or opt out with \
         HttpServing::allow_unauthenticated"
    )]
    Unprotected(SocketAddr),
    /// [`McpServer::with_request_state_key`] was given a key too short to sign with.
    #[error("MCP request-state key unusable: {0}")]
    RequestStateKey(String),
    /// A [`Cluster`] was given a name or a peer it cannot use.
    #[error("MCP cluster misconfigured: {0}")]
    Cluster(String),
    /// A tool reads a context (`Ctx<T>`) of another type than the one
    /// [`McpServer::with_context`] makes for each call.
    #[error(
        "tool \"{tool}\" reads a context of type `{needs}`, and the server's calls supply a `{supplied}`"
    )]
    ContextType {
        /// The tool's name.
        tool: String,
        /// The type its `Ctx<T>` reads.
        needs: &'static str,
        /// The type the server's context function returns.
        supplied: &'static str,
    },
}
