//! One live connection to an MCP server, as the client and its tools share it: the peer,
//! the listed tools, the failure that ended it, a stdio server's process, and the handler
//! that routes the server's notifications.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

// Sampling and roots are deprecated by SEP-2577, a revision after 2026-07-28.
#[allow(deprecated)]
use rmcp::model::{
    ClientConfig, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ErrorData, Implementation, ListRootsResult, ProgressNotificationParam,
    ProgressToken, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::{ClientHandler, Peer, RoleClient};
use tokio::sync::mpsc;

use super::McpError;
use super::answers::ClientAnswers;
use super::http::{ServerStream, StreamFailures};
use super::listing::{Limits, Listing, ToolsState, list_tools};
use crate::process::tree::Tree;
use crate::tool::{OutputSaver, ToolPolicy};

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
    /// Over streamable HTTP, where a call's response stream can break and the connection stay.
    pub(super) over_http: bool,
    // Dropped last: the service, then the child.
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    child: Mutex<Option<ChildGuard>>,
}

impl ClientInner {
    /// A connection over `service`, whose handler shares `shared`; `child` is a stdio
    /// server's process (without one, the connection is over HTTP).
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
            over_http: child.is_none(),
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

    /// The server's tools, within the bounds of [`Limits`](super::listing::Limits).
    pub(super) async fn list(&self) -> Result<Listing, McpError> {
        self.shared.list(&self.peer).await
    }

    /// Name the listed tools and keep those whose schema compiles.
    pub(super) fn install(&self, listing: Listing) -> Result<(), McpError> {
        self.shared.install(listing)
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
        // The tools answer with an error from now on.
        self.shared.clear_tools();
    }
}

/// Whether a refresh runs, and whether the list changed again since it began.
#[derive(Debug, Default)]
struct Refresh {
    running: bool,
    pending: bool,
}

/// What the connection's handler and the tools share.
pub(super) struct Shared {
    server: String,
    pub(super) limits: Limits,
    tools: RwLock<ToolsState>,
    refresh: Mutex<Refresh>,
    /// Why an HTTP response stream broke, for the call it was to answer.
    pub(super) stream_failures: Arc<StreamFailures>,
    /// Whether the server's own stream is open yet (streamable HTTP with a session).
    pub(super) server_stream: Arc<ServerStream>,
    pub(super) progress:
        Mutex<HashMap<ProgressToken, mpsc::UnboundedSender<ProgressNotificationParam>>>,
    failure: Mutex<Option<String>>,
    stderr: Option<Arc<Mutex<VecDeque<u8>>>>,
    taken: Mutex<Vec<String>>,
    /// Counts the installed tool lists, for whoever follows the server's changes.
    listings: tokio::sync::watch::Sender<u64>,
    /// What the application answers when the server asks.
    pub(super) answers: ClientAnswers,
}

impl Shared {
    /// The state of a new connection to `server`; `stderr` is a stdio server's tail.
    pub(super) fn new(
        server: String,
        limits: Limits,
        stderr: Option<Arc<Mutex<VecDeque<u8>>>>,
        answers: ClientAnswers,
    ) -> Arc<Self> {
        Arc::new(Shared {
            server,
            limits,
            tools: RwLock::default(),
            refresh: Mutex::default(),
            stream_failures: Arc::default(),
            server_stream: Arc::default(),
            progress: Mutex::default(),
            failure: Mutex::default(),
            stderr,
            taken: Mutex::default(),
            listings: tokio::sync::watch::Sender::new(0),
            answers,
        })
    }

    /// The server's name in the configuration.
    pub(super) fn server(&self) -> &str {
        &self.server
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

    /// The names other tools own already.
    pub(super) fn taken(&self) -> Vec<String> {
        self.taken
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The server's tools, within the bounds of [`Limits`](super::listing::Limits).
    async fn list(&self, peer: &Peer<RoleClient>) -> Result<Listing, McpError> {
        list_tools(peer, self.server(), self.limits, || self.failure()).await
    }

    /// Name the listed tools and make those whose schema compiles the server's tools.
    fn install(&self, listing: Listing) -> Result<(), McpError> {
        let taken = self.taken();
        self.set_tools(listing.compile(self.server(), &taken)?);
        Ok(())
    }

    /// Make `state` the server's tools, and tell whoever follows the changes; not once the
    /// connection has failed (a refresh that ends after `close` brings nothing back).
    fn set_tools(&self, state: ToolsState) {
        let mut tools = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        // Checked under the lock that `clear_tools` takes after the failure is set.
        if self.failure().is_some() {
            return;
        }
        *tools = state;
        drop(tools);
        self.listings.send_modify(|count| *count += 1);
    }

    /// Forget the tools: the connection is closed, and they would only hold memory. Whoever
    /// follows the changes is not told: the tools it has answer with an error, as before.
    fn clear_tools(&self) {
        *self.tools.write().unwrap_or_else(PoisonError::into_inner) = ToolsState::default();
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

/// The client side's handler: routes progress to the running call, refreshes the tool
/// list when the server says it changed, and answers the server's questions with the
/// application's answers.
pub(super) struct Handler {
    shared: Arc<Shared>,
    /// The revision asked for; `None`: rmcp's newest with the handshake.
    protocol: Option<ProtocolVersion>,
}

impl Handler {
    pub(super) fn new(shared: Arc<Shared>, protocol: Option<ProtocolVersion>) -> Self {
        Handler { shared, protocol }
    }
}

// Sampling and roots are deprecated by SEP-2577, a revision after 2026-07-28.
#[allow(deprecated)]
impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let config = ClientConfig::new(
            self.shared.answers.capabilities(),
            Implementation::new("pi-runtime", env!("CARGO_PKG_VERSION")),
        );
        match &self.protocol {
            Some(version) => config.with_protocol_version(version.clone()),
            None => config,
        }
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.shared.answers.elicit(request).await
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.shared.answers.sample(params).await
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.shared.answers.list_roots()
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
        refresh(&self.shared, context.peer);
    }
}

/// The server said its tool list changed: list it again in the background. A refresh that
/// runs already takes the news with it: it lists once more when it ends, so a storm of
/// notifications costs two listings, not one each.
fn refresh(shared: &Arc<Shared>, peer: Peer<RoleClient>) {
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
            let listed = tokio::time::timeout(shared.limits.timeout, shared.list(&peer))
                .await
                .unwrap_or_else(|_| {
                    Err(McpError::Connect(format!(
                        "MCP server {} did not list its tools within {:?}",
                        shared.server(),
                        shared.limits.timeout
                    )))
                });
            if let Err(error) = listed.and_then(|listing| shared.install(listing)) {
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
