//! An MCP server's tools in the agent: connect over stdio (a child process) or streamable
//! HTTP, list the tools, and run each as an [`AgentTool`].

use std::collections::VecDeque;
use std::fmt;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

#[cfg(feature = "mcp-oauth")]
use futures::FutureExt;
use rmcp::model::ProtocolVersion;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};
use tokio::io::AsyncReadExt;

use super::answers::ClientAnswers;
use super::connection::{ChildGuard, ClientInner, Handler, Shared};
use super::http::HttpBackend;
use super::listing::{DEFAULT_MAX_PAGES, DEFAULT_MAX_TOOL_SIZE, DEFAULT_MAX_TOOLS, Limits};
use super::schema::ListedTool;
use super::stdio::BoundedLines;
use super::tool::McpTool;
use super::{McpError, errors};
use crate::agent::Agent;
use crate::process::tree::{MARKER_VAR, Tree};
use crate::tool::ToolPolicy;
use crate::tool::{Exposure, Registration, RegistryError, ToolDefinition, ToolSet, ToolSetExt};
use crate::tool::{OutputSaver, TempFileSaver};

/// How long a call may go without an answer or a progress notification, by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Without [`McpClientBuilder::max_call_time`], the most one call may take in all is this
/// many times its timeout, however often the server reports progress.
pub const MAX_CALL_TIME_PER_TIMEOUT: u32 = 10;
/// The most one call may take in all with the default timeout, however often the server
/// reports progress: [`MAX_CALL_TIME_PER_TIMEOUT`] times [`DEFAULT_TIMEOUT`].
pub const DEFAULT_MAX_CALL_TIME: Duration =
    Duration::from_secs(DEFAULT_TIMEOUT.as_secs() * MAX_CALL_TIME_PER_TIMEOUT as u64);
/// The largest message taken from a server by default: one line over stdio, one SSE event or
/// JSON body over HTTP. rmcp's own default, the same both ways.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = DEFAULT_MAX_LINE_LENGTH;
/// Bytes of a child's standard error kept for error messages.
const STDERR_TAIL: usize = 4096;

/// The longest a new HTTP connection waits for the server's own stream to open.
const SERVER_STREAM_WAIT: Duration = Duration::from_secs(5);

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
    /// `None`: [`MAX_CALL_TIME_PER_TIMEOUT`] times the timeout.
    max_call_time: Option<Duration>,
    max_tools: usize,
    max_pages: usize,
    max_tool_size: usize,
    max_message_size: usize,
    taken: Vec<String>,
    saver: Arc<dyn OutputSaver>,
    policy: ToolPolicy,
    http: Option<reqwest::Client>,
    bearer: Option<String>,
    answers: ClientAnswers,
    /// `None`: the 2025-11-25 handshake, as rmcp speaks it.
    protocol: Option<ProtocolVersion>,
    #[cfg(feature = "mcp-oauth")]
    oauth: Option<super::oauth::OAuth>,
}

impl fmt::Debug for McpClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClientBuilder")
            .field("server", &self.server)
            .field("timeout", &self.timeout)
            .field("max_call_time", &self.max_call_time)
            .field("max_tools", &self.max_tools)
            .field("max_pages", &self.max_pages)
            .field("max_tool_size", &self.max_tool_size)
            .field("max_message_size", &self.max_message_size)
            .field("taken", &self.taken)
            .finish_non_exhaustive()
    }
}

impl McpClientBuilder {
    /// Answer the server's questions (elicitation, sampling, roots) with `answers`, and
    /// declare to it the capabilities they cover. Without, the client declares none and
    /// refuses every question with an error saying so.
    pub fn answers(mut self, answers: ClientAnswers) -> Self {
        self.answers = answers;
        self
    }

    /// Authorize with OAuth when the server asks for it (a `401`, or a `403` for more
    /// scopes): see [`oauth`](super::oauth). Over streamable HTTP only.
    #[cfg(feature = "mcp-oauth")]
    pub fn oauth(mut self, oauth: super::oauth::OAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// Speak the MCP revision `version` (`"2025-11-25"`, `"2026-07-28"`, ...): a revision
    /// with the `initialize` handshake opens a session with it; a later one (2026-07-28)
    /// discovers the server (`server/discover`) and sends each request on its own, with its
    /// metadata. Default: the handshake, at the newest version rmcp offers there.
    ///
    /// A version the server does not speak fails the connection ([`McpError::Connect`]).
    pub fn protocol_version(mut self, version: &str) -> Self {
        self.protocol = serde_json::from_value(serde_json::Value::from(version)).ok();
        self
    }

    /// How long connecting, and each call, may go without an answer; a call's timer
    /// restarts on every progress notification, up to the call's total time limit
    /// ([`max_call_time`](Self::max_call_time), by default [`MAX_CALL_TIME_PER_TIMEOUT`]
    /// times this timeout). Default [`DEFAULT_TIMEOUT`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The most one call may take in all, however often the server reports progress. When
    /// it passes, the server gets `notifications/cancelled` and the tool result says the call
    /// exceeded its total time limit. Default: [`MAX_CALL_TIME_PER_TIMEOUT`] times the
    /// [`timeout`](Self::timeout) ([`DEFAULT_MAX_CALL_TIME`] with the default timeout), so a
    /// server that reports progress forever holds a call with a 5 s timeout for 50 s.
    pub fn max_call_time(mut self, limit: Duration) -> Self {
        self.max_call_time = Some(limit);
        self
    }

    /// The total time limit of each call.
    fn call_time_limit(&self) -> Duration {
        self.max_call_time
            .unwrap_or_else(|| self.timeout.saturating_mul(MAX_CALL_TIME_PER_TIMEOUT))
    }

    /// The most tools taken from the server. A server that lists more gets its first
    /// `max_tools` taken, in its order; [`McpClient::list_warning`] (and a `tracing` warning)
    /// says so. Each tool taken holds its definition and compiled schema for as long as the
    /// client lives. Default [`DEFAULT_MAX_TOOLS`].
    pub fn max_tools(mut self, max_tools: usize) -> Self {
        self.max_tools = max_tools;
        self
    }

    /// The most `tools/list` pages read for one listing (at connection, and each time the
    /// server says its list changed); the tools of those pages are taken, and
    /// [`McpClient::list_warning`] says the list was cut. Default [`DEFAULT_MAX_PAGES`].
    pub fn max_pages(mut self, max_pages: usize) -> Self {
        self.max_pages = max_pages.max(1);
        self
    }

    /// The largest definition of one tool taken, in bytes (its `tools/list` entry as JSON:
    /// name, description, schemas, annotations). A larger one is left out and listed in
    /// [`McpClient::rejected_tools`] with its size; it counts toward
    /// [`max_tools`](Self::max_tools). Default [`DEFAULT_MAX_TOOL_SIZE`].
    pub fn max_tool_size(mut self, bytes: usize) -> Self {
        self.max_tool_size = bytes;
        self
    }

    /// The largest message taken from the server, in bytes: a line over stdio, an SSE event
    /// or a JSON body over HTTP. A stdio server that sends a larger one is disconnected at
    /// once, the reason saying so (what it answered cannot be told from a message never
    /// read); over HTTP, the call it answered fails with that reason and the connection
    /// stays. Default [`DEFAULT_MAX_MESSAGE_SIZE`].
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// Names other tools own already (those of servers connected before): a tool whose
    /// plain name is taken gets a hashed one (`mcp__<server>__<tool>` cut to 55 characters,
    /// `_`, and 8 hex digits of a SHA-256 of the raw names).
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

    /// The execution policy of every tool of the server (see [`ToolPolicy`]): a timeout,
    /// a retry budget, a named concurrency limit, an output cap. Unset fields take the
    /// agent's defaults.
    pub fn tool_policy(mut self, policy: ToolPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Send `Authorization: Bearer <token>` with every request of [`http`](Self::http), for
    /// a server that authenticates its clients (such as an [`McpServer`](super::McpServer)
    /// served with [`HttpServing::with_authentication`](super::HttpServing::with_authentication)).
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer = Some(token.into());
        self
    }

    /// The reqwest client for [`http`](Self::http) (default: a new one).
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = Some(client);
        self
    }

    /// Start `command` as the server and talk to it over its standard input and output.
    /// The child runs in its own process group, and every process it started (those that
    /// left the group with `setsid` too) is killed when the client and all its tools are
    /// dropped (or on [`McpClient::close`]). Its standard error
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
        // A process group of its own; the marker finds what leaves it (`setsid`).
        let token = Tree::new_token();
        command.process_group(0).env(MARKER_VAR, &token);
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
        let guard = ChildGuard::new(child, &token);
        let shared = Shared::new(
            self.server.clone(),
            self.limits(),
            Some(stderr),
            self.answers.clone(),
        );
        let handler = Handler::new(Arc::clone(&shared), self.protocol.clone());
        let stdout = BoundedLines::new(stdout, self.max_message_size, Arc::clone(&shared));
        let transport =
            AsyncRwTransport::new_client(stdout, stdin).with_max_line_length(self.max_message_size);
        let connect = handler.serve_with_lifecycle(transport, self.lifecycle());
        let service = match tokio::time::timeout(self.timeout, connect).await {
            Ok(Ok(service)) => service,
            Ok(Err(error)) => {
                return Err(McpError::Connect(shared.with_stderr(format!(
                    "MCP server {} did not initialize: {}",
                    self.server,
                    errors::client_init(&error)
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
        let shared = Shared::new(
            self.server.clone(),
            self.limits(),
            None,
            self.answers.clone(),
        );
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.clone())
            .max_sse_event_size(self.max_message_size)
            .max_json_response_size(self.max_message_size);
        if let Some(token) = &self.bearer {
            config = config.auth_header(token.clone());
        }
        let backend = HttpBackend::new(
            client,
            Arc::clone(&shared.stream_failures),
            Arc::clone(&shared.server_stream),
        );
        let handler = Handler::new(Arc::clone(&shared), self.protocol.clone());
        let lifecycle = self.lifecycle();
        #[cfg(feature = "mcp-oauth")]
        let connect = match self.oauth.clone() {
            Some(oauth) => {
                let backend = super::oauth::OAuthBackend::new(backend, url.clone(), oauth)
                    .await
                    .map_err(|e| {
                        McpError::Connect(format!("MCP server {} at {url}: {e}", self.server))
                    })?;
                let transport = StreamableHttpClientTransport::with_client(backend, config);
                handler.serve_with_lifecycle(transport, lifecycle).boxed()
            }
            None => {
                let transport = StreamableHttpClientTransport::with_client(backend, config);
                handler.serve_with_lifecycle(transport, lifecycle).boxed()
            }
        };
        #[cfg(not(feature = "mcp-oauth"))]
        let connect = {
            let transport = StreamableHttpClientTransport::with_client(backend, config);
            handler.serve_with_lifecycle(transport, lifecycle)
        };
        let service = match tokio::time::timeout(self.timeout, connect).await {
            Ok(Ok(service)) => service,
            Ok(Err(error)) => {
                return Err(McpError::Connect(format!(
                    "MCP server {} at {url} did not initialize: {}",
                    self.server,
                    errors::client_init(&error)
                )));
            }
            Err(_) => {
                return Err(McpError::Connect(format!(
                    "MCP server {} at {url} did not initialize within {:?}",
                    self.server, self.timeout
                )));
            }
        };
        // What the server sends on its own stream right after the first call must find it
        // open.
        shared
            .server_stream
            .ready(self.timeout.min(SERVER_STREAM_WAIT))
            .await;
        self.finish(service, shared, None).await
    }

    /// How the connection starts: the handshake, or discovery for a revision without one.
    fn lifecycle(&self) -> ClientLifecycleMode {
        match &self.protocol {
            Some(version) if !version.has_initialize() => ClientLifecycleMode::Discover {
                preferred_versions: vec![version.clone()],
            },
            _ => ClientLifecycleMode::Initialize,
        }
    }

    fn limits(&self) -> Limits {
        Limits {
            max_tools: self.max_tools,
            max_pages: self.max_pages,
            max_tool_size: self.max_tool_size,
            timeout: self.timeout,
        }
    }

    async fn finish(
        self,
        service: RunningService<RoleClient, Handler>,
        shared: Arc<Shared>,
        child: Option<ChildGuard>,
    ) -> Result<McpClient, McpError> {
        let max_call_time = self.call_time_limit();
        shared.set_taken(self.taken);
        let mut inner = ClientInner::new(
            self.server,
            service,
            shared,
            self.timeout,
            max_call_time,
            self.saver,
            child,
        );
        inner.policy = self.policy;
        let inner = Arc::new(inner);
        // Each page has the timeout; so does the whole listing, however many pages it reads.
        let listing = tokio::time::timeout(inner.timeout, inner.list())
            .await
            .map_err(|_| {
                McpError::Connect(format!(
                    "MCP server {} did not list its tools within {:?}",
                    inner.server, inner.timeout
                ))
            })??;
        inner.install(listing)?;
        Ok(McpClient { inner })
    }
}

/// A connected MCP server whose tools the agent can use.
///
/// It is a [`ToolSet`]: `Agent::builder().tools((Read::new(cwd), client))` registers the
/// server's tools next to any others, in the same one call. Each tool is named
/// `mcp__<server>__<tool>` and converts arguments, progress, cancellation and results as
/// pi's MCP extension does. The server lives as long as the client or any of its
/// tools; a stdio server's processes are killed then.
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
            max_call_time: None,
            max_tools: DEFAULT_MAX_TOOLS,
            max_pages: DEFAULT_MAX_PAGES,
            max_tool_size: DEFAULT_MAX_TOOL_SIZE,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            taken: Vec::new(),
            saver: Arc::new(TempFileSaver::new().with_prefix("pi-mcp-")),
            policy: ToolPolicy::new(),
            http: None,
            bearer: None,
            answers: ClientAnswers::default(),
            protocol: None,
            #[cfg(feature = "mcp-oauth")]
            oauth: None,
        }
    }

    /// The server's name in the configuration.
    pub fn server(&self) -> &str {
        &self.inner.server
    }

    /// The current definitions of the server's tools (refreshed when the server says its
    /// list changed).
    pub fn definitions(&self) -> Vec<ListedTool> {
        let state = self.inner.shared.state();
        state
            .listed
            .iter()
            .map(|listed| listed.definition.clone())
            .collect()
    }

    /// The names the agent knows the server's tools by, in the server's order.
    pub fn tool_names(&self) -> Vec<String> {
        self.inner
            .shared
            .state()
            .listed
            .iter()
            .map(|listed| listed.tool.name.clone())
            .collect()
    }

    /// Tools the server listed whose input schema does not compile, or whose definition is
    /// larger than [`max_tool_size`](McpClientBuilder::max_tool_size), with the reason; they
    /// are not offered to the model.
    pub fn rejected_tools(&self) -> Vec<(String, String)> {
        self.inner.shared.state().rejected.clone()
    }

    /// Why the current tool list holds fewer tools than the server offers, if it does: the
    /// server listed more than [`max_tools`](McpClientBuilder::max_tools), or on more than
    /// [`max_pages`](McpClientBuilder::max_pages) pages.
    pub fn list_warning(&self) -> Option<String> {
        self.inner.shared.state().cut.clone()
    }

    /// The server's tools as agent tools.
    pub fn tools(&self) -> Vec<Arc<dyn ToolDefinition>> {
        let state = self.inner.shared.state();
        state
            .listed
            .iter()
            .map(|listed| {
                Arc::new(McpTool::new(Arc::clone(&self.inner), listed)) as Arc<dyn ToolDefinition>
            })
            .collect()
    }

    /// Give the server's tools to a built agent, each with `exposure` when given (else as
    /// direct tools), and keep them current: when the server says its list changed, the
    /// agent's next request declares the tools it added, removed or redefined. Following
    /// ends when the agent or every handle of this client is gone.
    ///
    /// # Errors
    /// A tool name the agent has registered already, or a schema that does not compile;
    /// then nothing is registered.
    pub async fn attach(
        &self,
        agent: &Agent,
        exposure: Option<Exposure>,
    ) -> Result<(), RegistryError> {
        let switch = agent.tool_switch();
        let Some(tools) = switch.upgrade() else {
            return Ok(());
        };
        // Subscribed before reading the list, so no change between the two is missed.
        let mut listings = self.inner.shared.listings();
        let mut known = self.tool_names();
        let mut first = Some(exposed(self.tools(), exposure));
        tools.change(&mut |registry| registry.register_all(first.take().unwrap_or_default()))?;
        drop(tools);
        let client = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            while listings.changed().await.is_ok() {
                let (Some(inner), Some(tools)) = (client.upgrade(), switch.upgrade()) else {
                    return;
                };
                let client = McpClient { inner };
                let names = client.tool_names();
                let current = exposed(client.tools(), exposure);
                let applied = tools.change(&mut |registry| {
                    for gone in known.iter().filter(|name| !names.contains(name)) {
                        registry.remove(gone);
                    }
                    current
                        .iter()
                        .try_for_each(|registration| registry.replace(registration.clone()))
                });
                if let Err(error) = applied {
                    tracing::warn!(server = %client.server(), %error, "the server's new tool list was not applied");
                }
                known = names;
            }
        });
        Ok(())
    }

    /// Whether the connection is still up.
    pub fn is_connected(&self) -> bool {
        self.inner.failure().is_none()
    }

    /// The process id of a stdio server (also its process group's id), while it runs.
    pub fn process_id(&self) -> Option<u32> {
        self.inner.process_id()
    }

    /// The last bytes a stdio server wrote to its standard error.
    pub fn stderr_tail(&self) -> String {
        self.inner.shared.stderr_text()
    }

    /// Close the connection now; a stdio server's processes are killed and reaped. Its
    /// tools answer with an error from then on, and the client lists none (their
    /// definitions are released; a refresh under way brings none back).
    pub async fn close(&self) {
        self.inner.close().await;
    }
}

impl ToolSet for McpClient {
    fn into_registrations(self) -> Vec<Registration> {
        self.tools().into_registrations()
    }
}

impl ToolSet for &McpClient {
    fn into_registrations(self) -> Vec<Registration> {
        self.tools().into_registrations()
    }
}

/// `tools`, each registered with `exposure` when one is given.
fn exposed(tools: Vec<Arc<dyn ToolDefinition>>, exposure: Option<Exposure>) -> Vec<Registration> {
    match exposure {
        Some(exposure) => tools.with_exposure(exposure).into_registrations(),
        None => tools.into_registrations(),
    }
}
