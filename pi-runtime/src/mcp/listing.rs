//! Listing a server's tools within bounds: at most so many pages and so many tools a
//! listing, each page within the connection's timeout, and one refresh at a time however
//! many `notifications/tools/list_changed` arrive.

use std::io;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use rmcp::model::{
    ClientRequest, ListToolsRequest, PaginatedRequestParams, ServerResult, Tool as Entry,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use rmcp::{Peer, RoleClient};
use serde_json::Value;

use super::connection::{Listed, Shared};
use super::naming::tool_name;
use super::schema::tool_definitions;
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

/// Whether a refresh runs, and whether the list changed again since it began.
#[derive(Debug, Default)]
pub(super) struct Refresh {
    running: bool,
    pending: bool,
}

/// The server's tools, page after page, until the last page or a bound: past
/// [`Limits::max_tools`] or [`Limits::max_pages`] the tools taken so far are kept and the
/// listing says what was left out. Only the tools kept are converted; the rest of a page is
/// dropped with it.
pub(super) async fn list_tools(
    peer: &Peer<RoleClient>,
    shared: &Shared,
) -> Result<Listing, McpError> {
    let limits = shared.limits;
    let server = shared.server();
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
                let reason = shared.failure().unwrap_or_else(|| errors::service(&error));
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

/// Name the listed tools and keep those whose schema compiles, each with its compiled
/// definition (every tool made from it shares that one compilation).
pub(super) fn install(shared: &Shared, listing: Listing) -> Result<(), McpError> {
    let taken = shared.taken();
    let definitions = tool_definitions(shared.server(), &listing.tools, |name| {
        taken.iter().any(|t| t == name)
    })?;
    drop(listing.tools);
    let mut kept = Vec::with_capacity(definitions.len());
    let mut rejected = listing.too_large;
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
    if let Some(cut) = &listing.cut {
        tracing::warn!(server = %shared.server(), "{cut}");
    }
    shared.set_tools(kept, rejected, listing.cut);
    Ok(())
}

/// The server said its tool list changed: list it again in the background. A refresh that
/// runs already takes the news with it: it lists once more when it ends, so a storm of
/// notifications costs two listings, not one each.
pub(super) fn refresh(shared: &Arc<Shared>, peer: Peer<RoleClient>) {
    {
        let mut refresh = shared
            .refresh
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        refresh.pending = true;
        if refresh.running {
            return;
        }
        refresh.running = true;
    }
    let shared = Arc::clone(shared);
    // Listing is a request to the same peer: it cannot be awaited inside its own
    // notification handler.
    tokio::spawn(async move {
        loop {
            shared
                .refresh
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pending = false;
            // Within the timeout as a whole, as at connection, however many pages.
            let listed = tokio::time::timeout(shared.limits.timeout, list_tools(&peer, &shared))
                .await
                .unwrap_or_else(|_| {
                    Err(McpError::Connect(format!(
                        "MCP server {} did not list its tools within {:?}",
                        shared.server(),
                        shared.limits.timeout
                    )))
                });
            if let Err(error) = listed.and_then(|listing| install(&shared, listing)) {
                tracing::warn!(server = %shared.server(), %error, "the server's new tool list was not read");
            }
            let mut refresh = shared
                .refresh
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if !refresh.pending || peer.is_transport_closed() {
                refresh.running = false;
                return;
            }
        }
    });
}
