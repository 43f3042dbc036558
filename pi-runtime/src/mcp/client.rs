//! An MCP server's tools in the agent: connect over stdio (a child process) or streamable
//! HTTP, list the tools, and run each as an [`AgentTool`] (SPEC §12).

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientRequest, Implementation, ListToolsRequest,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ServerResult,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;

use super::McpError;
use super::content::{OutputSaver, TempFileSaver};
use super::http::HttpBackend;
use super::schema::{McpToolDefinition, tool_definitions};
use super::tool::McpTool;
use crate::tool::{Tool, ToolDefinition, ToolSet};

/// How long a call may go without an answer or a progress notification, by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Bytes of a child's standard error kept for error messages.
const STDERR_TAIL: usize = 4096;

/// Connects to one MCP server: [`McpClient::builder`], then [`stdio`](Self::stdio) or
/// [`http`](Self::http).
///
/// ```no_run
/// use std::time::Duration;
/// use pi_runtime::mcp::McpClient;
///
/// # async fn demo() -> Result<(), pi_runtime::mcp::McpError> {
/// let mut command = tokio::process::Command::new("npx");
/// command.args(["-y", "@modelcontextprotocol/server-everything"]);
/// let everything = McpClient::builder("everything")
///     .timeout(Duration::from_secs(30))
///     .stdio(command)
///     .await?;
/// let remote = McpClient::builder("remote")
///     .taken(everything.tool_names())
///     .http("http://127.0.0.1:8000/mcp")
///     .await?;
/// # let _ = remote;
/// # Ok(()) }
/// ```
#[must_use = "a builder does nothing until `stdio` or `http` connects it"]
pub struct McpClientBuilder {
    server: String,
    timeout: Duration,
    taken: Vec<String>,
    saver: Arc<dyn OutputSaver>,
    http: Option<reqwest::Client>,
}

impl fmt::Debug for McpClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClientBuilder")
            .field("server", &self.server)
            .field("timeout", &self.timeout)
            .field("taken", &self.taken)
            .finish_non_exhaustive()
    }
}

impl McpClientBuilder {
    /// How long connecting, and each call, may go without an answer; a call's timer
    /// restarts on every progress notification. Default [`DEFAULT_TIMEOUT`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Names other tools own already (those of servers connected before): a tool whose
    /// plain name is taken gets a hashed one (SPEC §12.1).
    pub fn taken<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.taken.extend(names.into_iter().map(Into::into));
        self
    }

    /// Where the full text of a cut result and binary resources are saved (default: new
    /// files in the system's temporary directory).
    pub fn output_saver(mut self, saver: impl OutputSaver + 'static) -> Self {
        self.saver = Arc::new(saver);
        self
    }

    /// The reqwest client for [`http`](Self::http) (default: a new one).
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = Some(client);
        self
    }

    /// Start `command` as the server and talk to it over its standard input and output.
    /// The child runs in its own process group, and the whole group is killed when the
    /// client and all its tools are dropped (or on [`McpClient::close`]). Its standard error
    /// is kept (the last 4 KB) for error messages.
    ///
    /// # Errors
    /// The command cannot be started, or the server does not initialize or list its tools.
    pub async fn stdio(
        self,
        command: impl Into<tokio::process::Command>,
    ) -> Result<McpClient, McpError> {
        let mut command: tokio::process::Command = command.into();
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command.spawn().map_err(|e| {
            McpError::Connect(format!("cannot start MCP server {}: {e}", self.server))
        })?;
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(mut pipe) = child.stderr.take() {
            let tail = Arc::clone(&stderr);
            tokio::spawn(async move {
                let mut buffer = [0u8; 1024];
                while let Ok(n @ 1..) = pipe.read(&mut buffer).await {
                    let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
                    tail.extend(&buffer[..n]);
                    let excess = tail.len().saturating_sub(STDERR_TAIL);
                    tail.drain(..excess);
                }
            });
        }
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(McpError::Connect("the child's pipes are missing".into()));
        };
        let guard = ChildGuard { child: Some(child) };
        let shared = Shared::new(self.server.clone(), Some(stderr));
        let handler = Handler {
            shared: Arc::clone(&shared),
        };
        let connect = handler.serve((stdout, stdin));
        let service = match tokio::time::timeout(self.timeout, connect).await {
            Ok(Ok(service)) => service,
            Ok(Err(error)) => {
                return Err(McpError::Connect(shared.with_stderr(format!(
                    "MCP server {} did not initialize: {error}",
                    self.server
                ))));
            }
            Err(_) => {
                return Err(McpError::Connect(shared.with_stderr(format!(
                    "MCP server {} did not initialize within {:?}",
                    self.server, self.timeout
                ))));
            }
        };
        self.finish(service, shared, Some(guard)).await
    }

    /// Talk to the server at `url` over streamable HTTP (our reqwest 0.12 backend for rmcp's
    /// transport).
    ///
    /// # Errors
    /// The server cannot be reached, or does not initialize or list its tools.
    pub async fn http(self, url: impl Into<String>) -> Result<McpClient, McpError> {
        let url = url.into();
        let client = self.http.clone().unwrap_or_default();
        let transport = StreamableHttpClientTransport::with_client(
            HttpBackend::new(client),
            StreamableHttpClientTransportConfig::with_uri(url.clone()),
        );
        let shared = Shared::new(self.server.clone(), None);
        let handler = Handler {
            shared: Arc::clone(&shared),
        };
        let service = match tokio::time::timeout(self.timeout, handler.serve(transport)).await {
            Ok(Ok(service)) => service,
            Ok(Err(error)) => {
                return Err(McpError::Connect(format!(
                    "MCP server {} at {url} did not initialize: {error}",
                    self.server
                )));
            }
            Err(_) => {
                return Err(McpError::Connect(format!(
                    "MCP server {} at {url} did not initialize within {:?}",
                    self.server, self.timeout
                )));
            }
        };
        self.finish(service, shared, None).await
    }

    async fn finish(
        self,
        service: RunningService<RoleClient, Handler>,
        shared: Arc<Shared>,
        child: Option<ChildGuard>,
    ) -> Result<McpClient, McpError> {
        let peer = service.peer().clone();
        *shared.taken.lock().unwrap_or_else(PoisonError::into_inner) = self.taken;
        let readable_resources = peer
            .peer_info()
            .is_some_and(|info| info.capabilities.resources.is_some());
        let inner = Arc::new(ClientInner {
            server: self.server,
            peer,
            shared,
            timeout: self.timeout,
            saver: self.saver,
            readable_resources,
            service: Mutex::new(Some(service)),
            child: Mutex::new(child),
        });
        let listed = tokio::time::timeout(inner.timeout, inner.list())
            .await
            .map_err(|_| {
                McpError::Connect(format!(
                    "MCP server {} did not list its tools",
                    inner.server
                ))
            })??;
        inner.install(listed)?;
        Ok(McpClient { inner })
    }
}

/// A connected MCP server whose tools the agent can use.
///
/// It is a [`ToolSet`]: `Agent::builder().tools((Read::new(cwd), client))` registers the
/// server's tools next to any others, in the same one call. Each tool is named
/// `mcp__<server>__<tool>` and converts arguments, progress, cancellation and results as
/// pi's MCP extension does (SPEC §12). The server lives as long as the client or any of its
/// tools; a stdio server's process group is killed then.
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<ClientInner>,
}

impl fmt::Debug for McpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.inner.server)
            .field("tools", &self.tool_names())
            .finish_non_exhaustive()
    }
}

impl McpClient {
    /// Start connecting to the server named `server` (its name in the configuration, used
    /// in tool names and labels).
    pub fn builder(server: impl Into<String>) -> McpClientBuilder {
        McpClientBuilder {
            server: server.into(),
            timeout: DEFAULT_TIMEOUT,
            taken: Vec::new(),
            saver: Arc::new(TempFileSaver::new()),
            http: None,
        }
    }

    /// The server's name in the configuration.
    pub fn server(&self) -> &str {
        &self.inner.server
    }

    /// The current definitions of the server's tools (refreshed when the server says its
    /// list changed).
    pub fn definitions(&self) -> Vec<McpToolDefinition> {
        self.inner.shared.state().definitions.clone()
    }

    /// The names the agent knows the server's tools by, in the server's order.
    pub fn tool_names(&self) -> Vec<String> {
        self.inner
            .shared
            .state()
            .definitions
            .iter()
            .map(|d| d.name.clone())
            .collect()
    }

    /// Tools the server listed whose input schema does not compile, with the reason; they
    /// are not offered to the model.
    pub fn rejected_tools(&self) -> Vec<(String, String)> {
        self.inner.shared.state().rejected.clone()
    }

    /// The server's tools as agent tools.
    pub fn tools(&self) -> Vec<Arc<dyn ToolDefinition>> {
        let state = self.inner.shared.state();
        state
            .definitions
            .iter()
            .map(|definition| {
                Arc::new(McpTool::new(Arc::clone(&self.inner), definition))
                    as Arc<dyn ToolDefinition>
            })
            .collect()
    }

    /// Whether the connection is still up.
    pub fn is_connected(&self) -> bool {
        self.inner.failure().is_none()
    }

    /// The process id of a stdio server (also its process group's id), while it runs.
    pub fn process_id(&self) -> Option<u32> {
        self.inner
            .child
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .and_then(|guard| guard.child.as_ref())
            .and_then(tokio::process::Child::id)
    }

    /// The last bytes a stdio server wrote to its standard error.
    pub fn stderr_tail(&self) -> String {
        self.inner.shared.stderr_text()
    }

    /// Close the connection now; a stdio server's process group is killed and reaped. Its
    /// tools answer with an error from then on.
    pub async fn close(&self) {
        let service = self
            .inner
            .service
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(service) = service {
            let _ = service.cancel().await;
        }
        let child = self
            .inner
            .child
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(mut child) = child {
            child.kill_and_wait().await;
        }
        self.inner.shared.fail("the connection was closed".into());
    }
}

impl ToolSet for McpClient {
    fn into_tools(self) -> Vec<Arc<dyn ToolDefinition>> {
        self.tools()
    }
}

impl ToolSet for &McpClient {
    fn into_tools(self) -> Vec<Arc<dyn ToolDefinition>> {
        self.tools()
    }
}

/// A stdio server's process: its group is killed on drop.
struct ChildGuard {
    child: Option<tokio::process::Child>,
}

impl ChildGuard {
    fn kill_group(child: &mut tokio::process::Child) {
        #[cfg(unix)]
        if let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = child.start_kill();
    }

    async fn kill_and_wait(&mut self) {
        if let Some(mut child) = self.child.take() {
            Self::kill_group(&mut child);
            let _ = child.wait().await;
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            Self::kill_group(&mut child);
            // Reap it; without a runtime, tokio's orphan queue does it later.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let _ = child.wait().await;
                });
            }
        }
    }
}

pub(super) struct ClientInner {
    pub(super) server: String,
    pub(super) peer: Peer<RoleClient>,
    pub(super) shared: Arc<Shared>,
    pub(super) timeout: Duration,
    pub(super) saver: Arc<dyn OutputSaver>,
    pub(super) readable_resources: bool,
    // Dropped last: the service, then the child.
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    child: Mutex<Option<ChildGuard>>,
}

impl ClientInner {
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
    async fn list(&self) -> Result<Vec<Value>, McpError> {
        list_tools(&self.peer, &self.server).await
    }

    /// Name the listed tools and keep those whose schema compiles.
    fn install(&self, listed: Vec<Value>) -> Result<(), McpError> {
        let taken = self
            .shared
            .taken
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        install(&self.shared, &listed, &taken)
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
                    "MCP server {server} did not list its tools: {error}"
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

fn install(shared: &Shared, listed: &[Value], taken: &[String]) -> Result<(), McpError> {
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
            Ok(_) => kept.push(definition),
            Err(error) => rejected.push((definition.name, error.to_string())),
        }
    }
    let mut state = shared.tools.write().unwrap_or_else(PoisonError::into_inner);
    state.definitions = kept;
    state.rejected = rejected;
    Ok(())
}

#[derive(Default)]
struct ToolsState {
    definitions: Vec<McpToolDefinition>,
    rejected: Vec<(String, String)>,
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
}

impl Shared {
    fn new(server: String, stderr: Option<Arc<Mutex<VecDeque<u8>>>>) -> Arc<Self> {
        Arc::new(Shared {
            server,
            tools: RwLock::default(),
            progress: Mutex::default(),
            failure: Mutex::default(),
            stderr,
            taken: Mutex::default(),
        })
    }

    fn state(&self) -> std::sync::RwLockReadGuard<'_, ToolsState> {
        self.tools.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(super) fn fail(&self, reason: String) {
        let mut failure = self.failure.lock().unwrap_or_else(PoisonError::into_inner);
        if failure.is_none() {
            *failure = Some(self.with_stderr(reason));
        }
    }

    fn stderr_text(&self) -> String {
        self.stderr.as_ref().map_or_else(String::new, |tail| {
            let tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
            let (a, b) = tail.as_slices();
            let mut bytes = a.to_vec();
            bytes.extend_from_slice(b);
            String::from_utf8_lossy(&bytes).trim().to_owned()
        })
    }

    fn with_stderr(&self, message: String) -> String {
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
struct Handler {
    shared: Arc<Shared>,
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
                let taken = shared
                    .taken
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                let _ = install(&shared, &listed, &taken);
            }
        });
    }
}
