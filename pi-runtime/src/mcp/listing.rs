//! Listing a server's tools within bounds: at most so many pages and so many tools a
//! listing, each page within the connection's timeout; then the tools named, and kept if
//! their schema compiles.

use std::io;
use std::time::Duration;

use rmcp::model::{
    ClientRequest, ListToolsRequest, PaginatedRequestParams, ServerResult, Tool as Entry,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use rmcp::{Peer, RoleClient};
use serde_json::Value;

use super::naming::tool_name;
use super::schema::{ListedTool, tool_definitions};
use super::{McpError, errors};
use crate::sse::byte_size;
use crate::tool::Tool;

/// The most tools taken from one server, by default.
pub const DEFAULT_MAX_TOOLS: usize = 1_000;
/// The most `tools/list` pages read for one listing, by default.
pub const DEFAULT_MAX_PAGES: usize = 100;
/// The largest definition of one tool (its `tools/list` entry as JSON) taken, by default:
/// far above the few kilobytes real tools take, and some 16,000 tokens of the model's
/// context.
pub const DEFAULT_MAX_TOOL_SIZE: usize = 64 << 10;

/// The bounds of one listing.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub(super) max_tools: usize,
    pub(super) max_pages: usize,
    pub(super) max_tool_size: usize,
    /// How long one page may take.
    pub(super) timeout: Duration,
}

/// The tools one listing took, those too large to take (named, with the reason), and why
/// it took fewer than the server offers, if it did.
#[derive(Default)]
pub(super) struct Listing {
    tools: Vec<Value>,
    too_large: Vec<(String, String)>,
    cut: Option<String>,
}

impl Listing {
    /// Take `tools` of one page; those over `limits.max_tool_size` are named and left out.
    fn take(&mut self, server: &str, tools: &[Entry], limits: Limits) -> Result<(), McpError> {
        for tool in tools {
            let mut size = ByteCount(0);
            serde_json::to_writer(&mut size, tool).map_err(|_| McpError::InvalidToolList)?;
            if size.0 > limits.max_tool_size {
                let reason = format!(
                    "its definition takes {}, more than the {} one tool may take",
                    byte_size(size.0),
                    byte_size(limits.max_tool_size)
                );
                self.too_large
                    .push((tool_name(server, &tool.name, |_| false), reason));
            } else {
                self.tools
                    .push(serde_json::to_value(tool).map_err(|_| McpError::InvalidToolList)?);
            }
        }
        Ok(())
    }

    /// How many tools the listing has taken or left out for their size.
    fn len(&self) -> usize {
        self.tools.len() + self.too_large.len()
    }
}

/// Counts the bytes written to it: the size of a tool's JSON, without the JSON.
struct ByteCount(usize);

impl io::Write for ByteCount {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A listed tool whose schema compiled.
pub(super) struct Listed {
    pub(super) definition: ListedTool,
    /// Its definition as the agent sees it, schema compiled.
    pub(super) tool: Tool,
}

/// The server's current tool list.
#[derive(Default)]
pub(super) struct ToolsState {
    pub(super) listed: Vec<Listed>,
    /// The tools whose schema does not compile, with the reason.
    pub(super) rejected: Vec<(String, String)>,
    /// Why the list holds fewer tools than the server offers, if it does.
    pub(super) cut: Option<String>,
}

/// The tools of `server`, page after page, until the last page or a bound: past
/// [`Limits::max_tools`] or [`Limits::max_pages`] the tools taken so far are kept and the
/// listing says what was left out. Only the tools kept are converted; the rest of a page is
/// dropped with it. A page that fails is explained by the connection's `failure`, if it has
/// one, else by the error of the request.
pub(super) async fn list_tools(
    peer: &Peer<RoleClient>,
    server: &str,
    limits: Limits,
    failure: impl Fn() -> Option<String>,
) -> Result<Listing, McpError> {
    let (mut listing, mut cursor, mut pages) = (Listing::default(), None, 0);
    loop {
        pages += 1;
        let request = ListToolsRequest::with_param(
            PaginatedRequestParams::default().with_cursor(cursor.take()),
        );
        let page = match request_page(peer, request, limits.timeout).await {
            Ok(ServerResult::ListToolsResult(result)) => result,
            Ok(_) => return Err(McpError::InvalidToolList),
            Err(error) => {
                let reason = failure().unwrap_or_else(|| errors::service(&error));
                return Err(McpError::Connect(format!(
                    "MCP server {server} did not list its tools: {reason}"
                )));
            }
        };
        let room = limits.max_tools - listing.len();
        if page.tools.len() > room {
            listing.take(server, &page.tools[..room], limits)?;
            listing.cut = Some(format!(
                "MCP server {server} lists more than {} tools; only the first {} are taken",
                limits.max_tools, limits.max_tools
            ));
            return Ok(listing);
        }
        listing.take(server, &page.tools, limits)?;
        match page.next_cursor.filter(|next| !next.is_empty()) {
            None => return Ok(listing),
            Some(_) if pages == limits.max_pages => {
                listing.cut = Some(format!(
                    "MCP server {server} lists its tools on more than {} pages; only those of \
                     the first {} are taken",
                    limits.max_pages, limits.max_pages
                ));
                return Ok(listing);
            }
            Some(next) => cursor = Some(next),
        }
    }
}

/// One `tools/list` request, answered within `timeout`.
async fn request_page(
    peer: &Peer<RoleClient>,
    request: ListToolsRequest,
    timeout: Duration,
) -> Result<ServerResult, ServiceError> {
    peer.send_request_with_option(
        ClientRequest::ListToolsRequest(request),
        PeerRequestOptions::with_timeout(timeout),
    )
    .await?
    .await_response()
    .await
}

impl Listing {
    /// Name the listed tools of `server` (a name in `taken` is owned by another tool) and
    /// keep those whose schema compiles, each with its compiled definition (every tool made
    /// from it shares that one compilation).
    pub(super) fn compile(self, server: &str, taken: &[String]) -> Result<ToolsState, McpError> {
        let definitions =
            tool_definitions(server, &self.tools, |name| taken.iter().any(|t| t == name))?;
        drop(self.tools);
        let mut kept = Vec::with_capacity(definitions.len());
        let mut rejected = self.too_large;
        for definition in definitions {
            let tool = Tool::new(
                definition.name.clone(),
                definition.description.clone(),
                definition.parameters.clone(),
            );
            match tool.compiled_schema() {
                Ok(_) => kept.push(Listed { definition, tool }),
                Err(error) => rejected.push((definition.name, error.to_string())),
            }
        }
        if let Some(cut) = &self.cut {
            tracing::warn!(server = %server, "{cut}");
        }
        Ok(ToolsState {
            listed: kept,
            rejected,
            cut: self.cut,
        })
    }
}
