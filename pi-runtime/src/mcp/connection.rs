//! One live connection to an MCP server, as the client and its tools share it: the peer,
//! the listed tools, the failure that ended it, a stdio server's process, and the handler
//! that routes the server's notifications.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientRequest, Implementation, ListToolsRequest,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ServerResult,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, Peer, RoleClient};
use serde_json::Value;
use tokio::sync::mpsc;

use super::content::OutputSaver;
use super::schema::{ListedTool, tool_definitions};
use super::{McpError, errors};
use crate::process::tree::Tree;
use crate::tool::Tool;
use crate::tool::ToolPolicy;

/// A stdio server's process: every process it started, `setsid` ones included, is killed on
/// drop (see [`tree`](crate::process::tree)).
pub(super) struct ChildGuard {
    child: Option<tokio::process::Child>,
    tree: Option<Arc<Tree>>,
}

impl ChildGuard {
    /// The guard of `child`, started in a process group of its own with
    /// [`MARKER_VAR`](crate::process::tree::MARKER_VAR)`=token` in its environment.
    pub(super) fn new(child: tokio::process::Child, token: &str) -> Self {
        let tree = crate::process::group_of(&child).map(|group| Arc::new(Tree::new(group, token)));
        ChildGuard {
            child: Some(child),
            tree,
        }
    }

    async fn kill_and_wait(&mut self) {
        if let Some(tree) = self.tree.take() {
            tree.kill_off_runtime().await;
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        // A drop cannot await; the walk takes a few milliseconds.
        if let Some(tree) = self.tree.take() {
            tree.kill();
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.start_kill();
            // Reap it; without a runtime, tokio's orphan queue does it later.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let _ = child.wait().await;
                });
            }
        }
    }
}

/// The connection the client and each of its tools hold.
pub(super) struct ClientInner {
    pub(super) server: String,
    pub(super) peer: Peer<RoleClient>,
    pub(super) shared: Arc<Shared>,
    pub(super) timeout: Duration,
    /// The most one call may take in all, progress or not.
    pub(super) max_call_time: Duration,
    pub(super) saver: Arc<dyn OutputSaver>,
    /// The execution policy of every tool of the server.
    pub(super) policy: ToolPolicy,
    pub(super) readable_resources: bool,
    // Dropped last: the service, then the child.
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    child: Mutex<Option<ChildGuard>>,
}

impl ClientInner {
    /// A connection over `service`, whose handler shares `shared`.
    pub(super) fn new(
        server: String,
        service: RunningService<RoleClient, Handler>,
        shared: Arc<Shared>,
        timeout: Duration,
        max_call_time: Duration,
        saver: Arc<dyn OutputSaver>,
        child: Option<ChildGuard>,
    ) -> Self {
        let peer = service.peer().clone();
        let readable_resources = peer
            .peer_info()
            .is_some_and(|info| info.capabilities.resources.is_some());
        ClientInner {
            server,
            peer,
            shared,
            timeout,
            max_call_time,
            saver,
            policy: ToolPolicy::new(),
            readable_resources,
            service: Mutex::new(Some(service)),
            child: Mutex::new(child),
        }
    }

    /// Why the connection is down, if it is.
    pub(super) fn failure(&self) -> Option<String> {
        if let Some(failure) = self.shared.failure() {
            return Some(failure);
        }
        if self.peer.is_transport_closed() {
            self.shared.fail("the server closed the connection".into());
            return self.shared.failure();
        }
        None
    }

    /// Every page of `tools/list`, as the JSON the server sent.
    pub(super) async fn list(&self) -> Result<Vec<Value>, McpError> {
        list_tools(&self.peer, &self.server).await
    }

    /// Name the listed tools and keep those whose schema compiles.
    pub(super) fn install(&self, listed: Vec<Value>) -> Result<(), McpError> {
        install(&self.shared, &listed)
    }

    /// The process id of a stdio server, while it runs.
    pub(super) fn process_id(&self) -> Option<u32> {
        self.child
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .and_then(|guard| guard.child.as_ref())
            .and_then(tokio::process::Child::id)
    }

    /// End the session, kill and reap every process of a stdio server, and fail every call
    /// from now on.
    pub(super) async fn close(&self) {
        let service = self
            .service
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(service) = service {
            let _ = service.cancel().await;
        }
        let child = self
            .child
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(mut child) = child {
            child.kill_and_wait().await;
        }
        self.shared.fail("the connection was closed".into());
    }
}

async fn list_tools(peer: &Peer<RoleClient>, server: &str) -> Result<Vec<Value>, McpError> {
    let mut tools = Vec::new();
    let mut cursor = None;
    loop {
        let request = ListToolsRequest {
            method: Default::default(),
            params: Some(PaginatedRequestParams::default().with_cursor(cursor)),
            extensions: Default::default(),
        };
        let page = match peer
            .send_request(ClientRequest::ListToolsRequest(request))
            .await
        {
            Ok(ServerResult::ListToolsResult(page)) => page,
            Ok(_) => return Err(McpError::InvalidToolList),
            Err(error) => {
                return Err(McpError::Connect(format!(
                    "MCP server {server} did not list its tools: {}",
                    errors::service(&error)
                )));
            }
        };
        for tool in &page.tools {
            tools.push(serde_json::to_value(tool).map_err(|_| McpError::InvalidToolList)?);
        }
        match page.next_cursor {
            Some(next) if !next.is_empty() => cursor = Some(next),
            _ => return Ok(tools),
        }
    }
}

/// Name the listed tools and keep those whose schema compiles, each with its compiled
/// definition (every tool made from it shares that one compilation).
fn install(shared: &Shared, listed: &[Value]) -> Result<(), McpError> {
    let taken = shared
        .taken
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let definitions = tool_definitions(&shared.server, listed, |name| {
        taken.iter().any(|t| t == name)
    })?;
    let mut kept = Vec::with_capacity(definitions.len());
    let mut rejected = Vec::new();
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
    {
        let mut state = shared.tools.write().unwrap_or_else(PoisonError::into_inner);
        state.listed = kept;
        state.rejected = rejected;
    }
    shared.listings.send_modify(|count| *count += 1);
    Ok(())
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
}

/// What the connection's handler and the tools share.
pub(super) struct Shared {
    server: String,
    tools: RwLock<ToolsState>,
    pub(super) progress:
        Mutex<HashMap<ProgressToken, mpsc::UnboundedSender<ProgressNotificationParam>>>,
    failure: Mutex<Option<String>>,
    stderr: Option<Arc<Mutex<VecDeque<u8>>>>,
    taken: Mutex<Vec<String>>,
    /// Counts the installed tool lists, for whoever follows the server's changes.
    listings: tokio::sync::watch::Sender<u64>,
}

impl Shared {
    /// The state of a new connection to `server`; `stderr` is a stdio server's tail.
    pub(super) fn new(server: String, stderr: Option<Arc<Mutex<VecDeque<u8>>>>) -> Arc<Self> {
        Arc::new(Shared {
            server,
            tools: RwLock::default(),
            progress: Mutex::default(),
            failure: Mutex::default(),
            stderr,
            taken: Mutex::default(),
            listings: tokio::sync::watch::Sender::new(0),
        })
    }

    /// A receiver that sees every new tool list from now on.
    pub(super) fn listings(&self) -> tokio::sync::watch::Receiver<u64> {
        self.listings.subscribe()
    }

    /// The names other tools own already: a tool of this server whose plain name is taken
    /// gets a hashed one.
    pub(super) fn set_taken(&self, taken: Vec<String>) {
        *self.taken.lock().unwrap_or_else(PoisonError::into_inner) = taken;
    }

    pub(super) fn state(&self) -> std::sync::RwLockReadGuard<'_, ToolsState> {
        self.tools.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Record why the connection failed. The reason reaches the model through the tool
    /// results; the server's standard error does not (it may hold anything, secrets
    /// included): it goes to a `tracing` warning, and to the program through
    /// [`McpClient::stderr_tail`](super::McpClient::stderr_tail).
    pub(super) fn fail(&self, reason: String) {
        let mut failure = self.failure.lock().unwrap_or_else(PoisonError::into_inner);
        if failure.is_none() {
            tracing::warn!(
                server = %self.server,
                stderr = %self.stderr_text(),
                "MCP server failed: {reason}"
            );
            *failure = Some(reason);
        }
    }

    pub(super) fn stderr_text(&self) -> String {
        self.stderr.as_ref().map_or_else(String::new, |tail| {
            let tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
            let (a, b) = tail.as_slices();
            let mut bytes = a.to_vec();
            bytes.extend_from_slice(b);
            String::from_utf8_lossy(&bytes).trim().to_owned()
        })
    }

    pub(super) fn with_stderr(&self, message: String) -> String {
        let stderr = self.stderr_text();
        if stderr.is_empty() {
            message
        } else {
            format!("{message}\n\nThe server's standard error ended with:\n{stderr}")
        }
    }
}

/// The client side's handler: routes progress to the running call and refreshes the tool
/// list when the server says it changed.
pub(super) struct Handler {
    shared: Arc<Shared>,
}

impl Handler {
    pub(super) fn new(shared: Arc<Shared>) -> Self {
        Handler { shared }
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("pi-runtime", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let progress = self
            .shared
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(sender) = progress.get(&params.progress_token) {
            let _ = sender.send(params);
        }
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        let shared = Arc::clone(&self.shared);
        let peer = context.peer;
        // Listing is a request to the same peer: it cannot be awaited inside its own
        // notification handler.
        tokio::spawn(async move {
            if let Ok(listed) = list_tools(&peer, &shared.server).await {
                let _ = install(&shared, &listed);
            }
        });
    }
}
