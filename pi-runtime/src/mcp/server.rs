//! Our tools over MCP: an rmcp `ServerHandler` over a [`ToolRegistry`], serving `tools/list`
//! and `tools/call` with the agent loop's own pipeline, over stdio or streamable HTTP.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock as McpContent, ErrorData,
    Implementation, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, Tool as McpTool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::auth::{self, Authentication, Gate, Principal};
use super::cluster::{self, Cluster};
use super::connections::{self, Limited, Peer};
use super::sessions::{self, SessionLimits, Sessions};
use super::{McpError, ToolHints, errors, first_write, origins, parse_error};
use crate::agent::dispatch::{Dispatcher, Lane, Policies, RunLimits};
use crate::agent::turn_tools::TurnTools;
use crate::agent::{Hooks, ToolPolicies};
use crate::message::{ContentBlock, ToolCall};
use crate::tool::{ExecutionMode, ToolDefinition, ToolRegistry, ToolResult, ToolSet};

/// The largest POST body streamable HTTP reads, by default: 4 MiB.
pub const DEFAULT_MAX_REQUEST_BODY: usize = 4 << 20;

/// How long [`McpServer::serve_http`] keeps a connection that answers nothing, by default.
pub const DEFAULT_CONNECTION_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Serves a [`ToolSet`] to MCP clients: `tools/list` and `tools/call` (with the agent loop's
/// prepare, coerce, validate and execute steps, and its error texts), over stdio
/// ([`serve_stdio`](Self::serve_stdio)) or streamable HTTP ([`serve_http`](Self::serve_http),
/// [`router`](Self::router)).
///
/// Cloning is cheap; clones share the tools and the lock that keeps sequential tools one at a
/// time across every connection.
///
/// ```
/// use pi_runtime::mcp::{McpServer, ToolHints};
/// use pi_runtime::tool;
///
/// /// Add two numbers.
/// #[tool]
/// async fn add(a: f64, b: f64) -> String {
///     (a + b).to_string()
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), pi_runtime::mcp::McpError> {
/// let server = McpServer::new((Add,))?
///     .with_name("calculator", "1.0.0")
///     .with_hints("add", ToolHints::new().read_only(true));
/// // Serve it on a loopback port; `serve_stdio` serves standard input and output instead.
/// let http = server.serve_http("127.0.0.1:0".parse().expect("an address")).await?;
/// println!("MCP endpoint: {}", http.url());
/// http.shutdown().await;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<ServerInner>,
}

struct ServerInner {
    tools: Arc<TurnTools>,
    hooks: Arc<Hooks>,
    /// The tools' execution policies, for every call of every connection.
    policies: Arc<Policies>,
    listed: Vec<McpTool>,
    name: String,
    version: String,
    instructions: Option<String>,
    /// Tools per `tools/list` page; all in one page when `None`.
    page_size: Option<usize>,
    /// Sessions over streamable HTTP.
    session_limits: SessionLimits,
    /// Connections [`McpServer::serve_http`] keeps open; by default, from the descriptor limit.
    max_connections: Option<usize>,
    /// How streamable HTTP authenticates its clients; `None`: it does not.
    auth: Option<Authentication>,
    /// Whether [`McpServer::serve_http`] may serve beyond loopback without authentication.
    unauthenticated: bool,
    /// Browser origins streamable HTTP accepts (none by default).
    origins: Vec<String>,
    /// The largest POST body streamable HTTP reads.
    max_body: usize,
    /// How long [`McpServer::serve_http`] keeps a connection that answers nothing.
    connection_idle: Duration,
    /// This instance and its peers, when several serve one endpoint.
    cluster: Option<Arc<Cluster>>,
    /// Sequential tools run alone across every connection.
    lane: Lane,
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.inner.name)
            .field("tools", &self.inner.tools)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// A server for these tools (anything `Agent::builder().tools(..)` takes). Every schema is
    /// compiled here.
    ///
    /// # Errors
    /// [`McpError::Registry`]: two tools share a name, or a schema does not compile.
    pub fn new(tools: impl ToolSet) -> Result<Self, McpError> {
        let tools = TurnTools::active(Arc::new(ToolRegistry::new(tools)?));
        let listed = tools
            .offered()
            .map(|tool| listed_tool(tool.as_ref()))
            .collect();
        Ok(McpServer {
            inner: Arc::new(ServerInner {
                tools: Arc::new(tools),
                hooks: Arc::new(Hooks::default()),
                policies: Arc::default(),
                listed,
                name: "pi-runtime".to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                instructions: None,
                page_size: None,
                session_limits: SessionLimits::default(),
                max_connections: None,
                auth: None,
                unauthenticated: false,
                origins: Vec::new(),
                max_body: DEFAULT_MAX_REQUEST_BODY,
                connection_idle: DEFAULT_CONNECTION_IDLE_TIMEOUT,
                cluster: None,
                lane: Lane::default(),
            }),
        })
    }

    /// Run these hooks around every call, as an agent does: `before_tool_call` may block
    /// or rewrite a call, `after_tool_call` may patch its result. Give it an agent's hooks
    /// ([`Agent::hooks`](crate::agent::Agent::hooks)) to serve its tools under the same
    /// rules. The turn hooks are not used: a server has no turns.
    #[must_use]
    pub fn with_hooks(mut self, hooks: Hooks) -> Self {
        self.inner_mut().hooks = Arc::new(hooks);
        self
    }

    /// Run every call under these execution policies (see
    /// [`ToolPolicy`](crate::tool::ToolPolicy)). Give it an agent's
    /// ([`Agent::tool_policies`](crate::agent::Agent::tool_policies)) to serve its tools as the
    /// agent runs them: its default timeout, retry budget and output cap for the tools that set
    /// none, its output saver, and its named concurrency limits, whose permits the served calls
    /// and the agent's own calls then share. Without it, each tool's own policy applies, with
    /// limits of the server's own. A limit keeps the permits it was made with. Retry budgets
    /// count the failed calls of one run, and a served call is part of none.
    #[must_use]
    pub fn with_tool_policies(mut self, policies: ToolPolicies) -> Self {
        self.inner_mut().policies = policies.inner;
        self
    }

    /// The name and version clients see in `initialize` (default: `pi-runtime` and this
    /// crate's version).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        let inner = self.inner_mut();
        inner.name = name.into();
        inner.version = version.into();
        self
    }

    /// Instructions clients may give their model.
    #[must_use]
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.inner_mut().instructions = Some(instructions.into());
        self
    }

    /// List the tools `size` at a time: `tools/list` then answers with pages and a
    /// `nextCursor` (default: every tool in one page). Zero counts as one.
    #[must_use]
    pub fn with_page_size(mut self, size: usize) -> Self {
        self.inner_mut().page_size = Some(size.max(1));
        self
    }

    /// How many sessions streamable HTTP keeps open, in total and per client address, and
    /// how long an idle one lives (default [`SessionLimits::default`]).
    #[must_use]
    pub fn with_session_limits(mut self, limits: SessionLimits) -> Self {
        self.inner_mut().session_limits = limits;
        self
    }

    /// The most connections [`serve_http`](Self::serve_http) keeps open at once. When full,
    /// a new connection takes the place of one whose request has not arrived (a slow client,
    /// oldest first), else of the one idle longest; one whose request is being answered is
    /// never closed for it. Default: the process's soft limit of open files, less an eighth
    /// of it (at least 64) kept for everything else.
    #[must_use]
    pub fn with_max_connections(mut self, max: usize) -> Self {
        self.inner_mut().max_connections = Some(max);
        self
    }

    /// Authenticate every streamable HTTP request as `auth` says: a bearer token on each, the
    /// scopes each tool requires, the RFC 9728 metadata ([`auth`](super::auth) tells the
    /// whole protocol). Stdio is not affected: whoever starts the process owns it.
    #[must_use]
    pub fn with_authentication(mut self, auth: Authentication) -> Self {
        self.inner_mut().auth = Some(auth);
        self
    }

    /// Let [`serve_http`](Self::serve_http) serve an address beyond loopback without
    /// authentication, which it otherwise refuses: anyone who reaches the port can call
    /// every tool. Each such start is logged as a warning.
    #[must_use]
    pub fn allow_unauthenticated(mut self) -> Self {
        self.inner_mut().unauthenticated = true;
        self
    }

    /// Browser origins (`https://app.example.com`, with `:*` for any port) whose pages may
    /// call the server, besides its own. A request with any other `Origin` header is
    /// refused with `403`, while clients that send no `Origin` (SDKs, other services) pass.
    ///
    /// The server's own pages are always accepted: those of the names it answers to, over
    /// `http` or `https`. On loopback ([`serve_http`](Self::serve_http) of a loopback
    /// address, [`router`](Self::router)) these are `localhost`, `127.0.0.1` and `[::1]` on
    /// any port; for [`router_for_hosts`](Self::router_for_hosts), the names given (on the
    /// port given, else any); for `serve_http` of an address beyond loopback, that address
    /// (none for a wildcard address: allow the names the server is reached by here).
    #[must_use]
    pub fn with_allowed_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.inner_mut().origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// The largest POST body streamable HTTP reads (default 4 MiB); a larger one gets `413`.
    #[must_use]
    pub fn with_max_request_body(mut self, bytes: usize) -> Self {
        self.inner_mut().max_body = bytes;
        self
    }

    /// How long [`serve_http`](Self::serve_http) keeps a connection open that is answering
    /// nothing: one whose request has not fully arrived (a client sending its headers a byte
    /// at a time), or idle between requests (default a minute). A connection streaming an
    /// answer is never closed for it.
    #[must_use]
    pub fn with_connection_idle_timeout(mut self, timeout: Duration) -> Self {
        self.inner_mut().connection_idle = timeout;
        self
    }

    /// Serve as one instance of several behind a load balancer that need not be sticky: a
    /// request for a session another instance holds is forwarded there, so calls, progress
    /// and cancellation of one session all meet on the instance running them. See
    /// [`Cluster`] for how, and what happens when an instance stops.
    #[must_use]
    pub fn with_cluster(mut self, cluster: Cluster) -> Self {
        self.inner_mut().cluster = Some(Arc::new(cluster));
        self
    }

    /// List `hints` as the behaviour hints of the tool named `tool`, in place of the tool's
    /// own ([`ToolDefinition::hints`], listed by default): a hint `hints` leaves unset is not
    /// listed. Ignored when there is no such tool.
    #[must_use]
    pub fn with_hints(mut self, tool: &str, hints: ToolHints) -> Self {
        if let Some(listed) = self.inner_mut().listed.iter_mut().find(|t| t.name == tool) {
            let title = listed.annotations.take().and_then(|a| a.title);
            listed.annotations = annotations(title, hints);
        }
        self
    }

    /// The builder methods run before the server is shared; a clone made earlier keeps the
    /// old settings.
    fn inner_mut(&mut self) -> &mut ServerInner {
        if Arc::get_mut(&mut self.inner).is_none() {
            let old = &self.inner;
            self.inner = Arc::new(ServerInner {
                tools: Arc::clone(&old.tools),
                hooks: Arc::clone(&old.hooks),
                policies: Arc::clone(&old.policies),
                listed: old.listed.clone(),
                name: old.name.clone(),
                version: old.version.clone(),
                instructions: old.instructions.clone(),
                page_size: old.page_size,
                session_limits: old.session_limits,
                max_connections: old.max_connections,
                auth: old.auth.clone(),
                unauthenticated: old.unauthenticated,
                origins: old.origins.clone(),
                max_body: old.max_body,
                connection_idle: old.connection_idle,
                cluster: old.cluster.clone(),
                lane: Lane::default(),
            });
        }
        Arc::get_mut(&mut self.inner).unwrap_or_else(|| unreachable!("just made unique"))
    }

    /// The `tools/list` entries, in registration order.
    pub fn listed_tools(&self) -> Vec<Value> {
        self.inner
            .listed
            .iter()
            .map(|tool| serde_json::to_value(tool).unwrap_or(Value::Null))
            .collect()
    }

    /// Serve standard input and output until the client closes them.
    ///
    /// # Errors
    /// The connection failed before or during initialization.
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Serve one connection over a byte stream pair (a pipe, a socket, a
    /// `tokio::io::duplex`) until it closes.
    ///
    /// # Errors
    /// The connection failed before or during initialization.
    pub async fn serve_io<R, W>(self, reader: R, writer: W) -> Result<(), McpError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let running = self
            .serve((reader, writer))
            .await
            .map_err(|e| McpError::Connect(errors::server_init(&e)))?;
        running
            .waiting()
            .await
            .map_err(|e| McpError::Connect(format!("the connection's task failed: {e}")))?;
        Ok(())
    }

    /// The streamable HTTP endpoint as an axum router serving `path` (for example `/mcp`),
    /// to merge into an application's own router. Only loopback `Host`s (`localhost`,
    /// `127.0.0.1`, `[::1]`, any port) are accepted, and only browser pages of those origins
    /// or of [`with_allowed_origins`](Self::with_allowed_origins), which protects a local
    /// server from DNS rebinding; use [`router_for_hosts`](Self::router_for_hosts) behind a
    /// real host name.
    ///
    /// Sessions are capped as [`with_session_limits`](Self::with_session_limits) says (per
    /// client only when served with `into_make_service_with_connect_info::<SocketAddr>()`),
    /// and a client that hangs up in the middle of a call has the call cancelled. The cap on
    /// connections is [`serve_http`](Self::serve_http)'s own.
    pub fn router(&self, path: &str) -> axum::Router {
        self.router_with(path, StreamableHttpServerConfig::default(), None)
    }

    /// Like [`router`](Self::router), accepting requests for these `Host` names (or
    /// `host:port` authorities), and from browser pages served by them (`http` or `https`,
    /// on the port given, else any) or of [`with_allowed_origins`](Self::with_allowed_origins).
    pub fn router_for_hosts<I, S>(&self, path: &str, hosts: I) -> axum::Router
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.router_with(
            path,
            StreamableHttpServerConfig::default().with_allowed_hosts(hosts),
            None,
        )
    }

    /// The endpoint at `path`; `bound` is the address of a server bound to one: its pages'
    /// origin, and its resource URI when the authentication settings name none.
    fn router_with(
        &self,
        path: &str,
        config: StreamableHttpServerConfig,
        bound: Option<SocketAddr>,
    ) -> axum::Router {
        let inner = &self.inner;
        let server = self.clone();
        let max_body = inner.max_body;
        let origins = origins::allowed_origins(&inner.origins, &config.allowed_hosts, bound);
        let config = config
            .with_max_request_body_bytes(max_body)
            .with_allowed_origins(origins)
            .enforce_origin_validation()
            // A request of the 2026-07-28 revision that sends nothing before its answer (no
            // progress) is answered as plain JSON rather than as an event stream of one event.
            .with_json_response(true);
        let sessions = Sessions::new(inner.session_limits);
        let service =
            StreamableHttpService::new(move || Ok(server.clone()), sessions.manager(), config);
        // A wildcard address is no URI a client reaches.
        let resource = bound
            .filter(|addr| !addr.ip().is_unspecified())
            .map(|addr| format!("http://{addr}{path}"));
        let gate = inner
            .auth
            .clone()
            .map(|auth| Gate::new(auth, path, resource));
        // The last layer added runs first: the token, the body check, the connection's
        // activity, the instance holding the session, the token's scopes for the tool
        // called, the sessions, then the hold on a quick answer's head.
        let mut router = axum::Router::new()
            .route_service(path, service)
            .layer(axum::middleware::from_fn(first_write::hold_head))
            .layer(axum::middleware::from_fn_with_state(
                sessions,
                sessions::guard,
            ));
        if let Some(gate) = &gate {
            router = router.layer(axum::middleware::from_fn_with_state(
                Arc::clone(gate),
                auth::authorize,
            ));
        }
        if let Some(instances) = &inner.cluster {
            router = router.layer(axum::middleware::from_fn_with_state(
                Arc::clone(instances),
                cluster::route,
            ));
        }
        router = router
            .layer(axum::middleware::from_fn(connections::track))
            .layer(axum::middleware::from_fn_with_state(
                max_body,
                parse_error::check_body,
            ));
        match gate {
            Some(gate) => router
                .layer(axum::middleware::from_fn_with_state(
                    Arc::clone(&gate),
                    auth::authenticate,
                ))
                .merge(auth::metadata_router(gate)),
            None => router,
        }
    }

    /// Serve streamable HTTP at `http://<addr>/mcp` in a background task. Bind a loopback
    /// address (`127.0.0.1:0` picks a free port) unless the server must be reachable from
    /// other machines.
    ///
    /// Connections are capped below the process's descriptor limit
    /// ([`with_max_connections`](Self::with_max_connections)), sessions in total and per
    /// client address ([`with_session_limits`](Self::with_session_limits)), and a client that
    /// hangs up in the middle of a call has the call cancelled.
    ///
    /// # Errors
    /// - [`McpError::Unprotected`]: `addr` is not a loopback address, and the server neither
    ///   authenticates ([`with_authentication`](Self::with_authentication)) nor was told to
    ///   serve without ([`allow_unauthenticated`](Self::allow_unauthenticated)).
    /// - [`McpError::Connect`]: the address cannot be bound.
    pub async fn serve_http(&self, addr: SocketAddr) -> Result<McpHttpServer, McpError> {
        let remote = !addr.ip().is_loopback();
        if remote && self.inner.auth.is_none() {
            if !self.inner.unauthenticated {
                return Err(McpError::Unprotected(addr));
            }
            tracing::warn!(
                %addr,
                "serving MCP without authentication on an address other machines can reach: \
                 anyone who reaches it can call every tool"
            );
        }
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| McpError::Connect(format!("cannot listen on {addr}: {e}")))?;
        let local = listener
            .local_addr()
            .map_err(|e| McpError::Connect(e.to_string()))?;
        let stop = CancellationToken::new();
        // Cancelling it ends the MCP sessions and their streams, so the graceful shutdown
        // below does not wait on an open SSE stream.
        let config =
            StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token());
        let config = if remote {
            // Bound beyond loopback on purpose: any host name may reach it.
            config.disable_allowed_hosts()
        } else {
            config
        };
        let router = self.router_with("/mcp", config, Some(local));
        let max = self
            .inner
            .max_connections
            .unwrap_or_else(connections::default_max_connections);
        let listener = Limited::new(listener, max, self.inner.connection_idle);
        let stopped = stop.clone();
        let task = tokio::spawn(async move {
            let service = router.into_make_service_with_connect_info::<Peer>();
            let _ = axum::serve(listener, service)
                .with_graceful_shutdown(async move { stopped.cancelled().await })
                .await;
        });
        Ok(McpHttpServer {
            addr: local,
            stop,
            task: Some(task),
        })
    }

    /// Whether `principal` (the token's, over authenticated HTTP) may see and call `tool`.
    fn allows(&self, principal: Option<&Principal>, tool: &str) -> bool {
        match (&self.inner.auth, principal) {
            (Some(auth), Some(principal)) => auth.allows(principal, tool),
            _ => true,
        }
    }

    /// One `tools/list` page of the tools `principal` may see, and the cursor of the next;
    /// the cursor is the index of the page's first tool.
    fn page(
        &self,
        cursor: Option<&str>,
        principal: Option<&Principal>,
    ) -> Result<(Vec<McpTool>, Option<String>), ErrorData> {
        let listed: Vec<McpTool> = self
            .inner
            .listed
            .iter()
            .filter(|tool| self.allows(principal, &tool.name))
            .cloned()
            .collect();
        let Some(size) = self.inner.page_size else {
            return Ok((listed, None));
        };
        let start = match cursor {
            None => 0,
            Some(cursor) => cursor
                .parse::<usize>()
                .ok()
                .filter(|&start| start <= listed.len())
                .ok_or_else(|| {
                    ErrorData::invalid_params(format!("Invalid cursor: {cursor}"), None)
                })?,
        };
        let end = start.saturating_add(size).min(listed.len());
        let next = (end < listed.len()).then(|| end.to_string());
        Ok((listed[start..end].to_vec(), next))
    }

    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let inner = &self.inner;
        let name = request.name.as_ref();
        if !self.allows(principal(&context).as_deref(), name) {
            return Err(ErrorData::invalid_request(
                format!("The token may not call the tool \"{name}\""),
                None,
            ));
        }
        // A `Json<T>` output's `details` are its structured content.
        let structured = inner
            .tools
            .get(name)
            .ok_or_else(|| ErrorData::invalid_params(format!("Unknown tool: {name}"), None))?
            .output_schema()
            .is_some();
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let call = ToolCall::new(request_id(&context), name, arguments);
        let limits = RunLimits {
            signal: context.ct.clone(),
            deadline: None,
            context: None,
            run_key: None,
            nested_failures: None,
        };
        let dispatcher = Dispatcher::new(
            Arc::clone(&inner.tools),
            Arc::clone(&inner.hooks),
            Arc::clone(&inner.policies),
            ExecutionMode::Parallel,
            Arc::new(limits),
            false,
        );
        let progress = Progress::new(&context);
        let result = dispatcher
            .call(&call, Arc::from(Vec::new()), Some(&inner.lane), |update| {
                progress.send(update)
            })
            .await;
        Ok(mcp_result(result, structured))
    }
}

/// A streamable HTTP server running in the background ([`McpServer::serve_http`]). Dropping
/// it stops the server too.
#[derive(Debug)]
pub struct McpHttpServer {
    addr: SocketAddr,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl McpHttpServer {
    /// The bound address (with the port picked for `:0`).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The MCP endpoint, `http://<addr>/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Stop accepting connections and wait until the server task ends.
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        if let Some(mut task) = self.task.take() {
            // Requests still running get a moment to answer; a client that holds a connection
            // open does not keep the server alive.
            if tokio::time::timeout(Duration::from_secs(1), &mut task)
                .await
                .is_err()
            {
                task.abort();
                let _ = task.await;
            }
        }
    }
}

impl Drop for McpHttpServer {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Progress updates become `notifications/progress` when the client sent a progress token.
struct Progress {
    token: Option<rmcp::model::ProgressToken>,
    peer: rmcp::Peer<RoleServer>,
    count: AtomicU32,
}

impl Progress {
    fn new(context: &RequestContext<RoleServer>) -> Self {
        Progress {
            token: context.meta.get_progress_token(),
            peer: context.peer.clone(),
            count: AtomicU32::new(0),
        }
    }

    fn send(&self, update: ToolResult) -> impl Future<Output = ()> + Send + use<> {
        let notification = self.token.clone().map(|token| {
            let count = self.count.fetch_add(1, Ordering::Relaxed) + 1;
            let mut param = ProgressNotificationParam::new(token, f64::from(count));
            let text = update.text_content();
            if !text.is_empty() {
                param = param.with_message(text);
            }
            param
        });
        let peer = self.peer.clone();
        async move {
            if let Some(param) = notification {
                // A client that went away misses its progress; the call itself goes on.
                let _ = peer.notify_progress(param).await;
            }
        }
    }
}

/// The principal of an authenticated HTTP request.
fn principal(context: &RequestContext<RoleServer>) -> Option<Arc<Principal>> {
    context
        .extensions
        .get::<axum::http::request::Parts>()?
        .extensions
        .get::<Arc<Principal>>()
        .cloned()
}

fn request_id(context: &RequestContext<RoleServer>) -> String {
    match serde_json::to_value(&context.id) {
        Ok(Value::String(id)) => id,
        Ok(other) => other.to_string(),
        Err(_) => "mcp-call".to_owned(),
    }
}

/// One `tools/list` entry.
fn listed_tool(tool: &dyn ToolDefinition) -> McpTool {
    let definition = tool.definition();
    let schema = match &definition.parameters {
        Value::Object(schema) => schema.clone(),
        _ => Map::new(),
    };
    let mut listed = McpTool::new(
        definition.name.clone(),
        definition.description.clone(),
        Arc::new(schema),
    );
    if let Some(Value::Object(output)) = tool.output_schema() {
        listed = listed.with_raw_output_schema(Arc::new(output));
    }
    let label = tool.label();
    let title = (label != definition.name).then(|| label.to_owned());
    if let Some(title) = &title {
        listed = listed.with_title(title);
    }
    listed.annotations = annotations(title, tool.hints());
    listed
}

/// A listing's annotations: the title (the tool's label) and the behaviour hints; `None`
/// when there is neither.
fn annotations(title: Option<String>, hints: ToolHints) -> Option<ToolAnnotations> {
    if title.is_none() && hints == ToolHints::default() {
        return None;
    }
    let mut annotations = ToolAnnotations::default();
    annotations.title = title;
    annotations.read_only_hint = hints.read_only;
    annotations.destructive_hint = hints.destructive;
    annotations.idempotent_hint = hints.idempotent;
    annotations.open_world_hint = hints.open_world;
    Some(annotations)
}

/// Our result as an MCP `CallToolResult`.
fn mcp_result(result: ToolResult, structured: bool) -> CallToolResult {
    let content: Vec<McpContent> = result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(McpContent::text(text.text.clone())),
            ContentBlock::Image(image) => Some(McpContent::image(
                image.data.clone(),
                image.mime_type.clone(),
            )),
            _ => None,
        })
        .collect();
    let structured_content = match (&result.structured_content, &result.details) {
        (Some(value @ Value::Object(_)), _) => Some(value.clone()),
        (_, Some(value @ Value::Object(_))) if structured && !result.is_error => {
            Some(value.clone())
        }
        _ => None,
    };
    let mut out = if result.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    out.structured_content = structured_content;
    out
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().build();
        let mut info = ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(&self.inner.name, &self.inner.version));
        if let Some(instructions) = &self.inner.instructions {
            info = info.with_instructions(instructions.clone());
        }
        info
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let principal = principal(&context);
        let (tools, next) = self.page(
            request.and_then(|r| r.cursor).as_deref(),
            principal.as_deref(),
        )?;
        let mut page = ListToolsResult::with_all_items(tools);
        page.next_cursor = next;
        Ok(page)
    }

    fn get_tool(&self, name: &str) -> Option<McpTool> {
        self.inner.listed.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.call(request, context).await.map(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Say hello.
    #[crate::tool]
    async fn hello() -> String {
        "hello".into()
    }

    /// Say bye.
    #[crate::tool]
    async fn bye() -> String {
        "bye".into()
    }

    #[test]
    fn pages_follow_the_cursor() {
        let server = McpServer::new((Hello, Bye, HelloAgain))
            .expect("tools register")
            .with_page_size(2);
        let names = |tools: Vec<McpTool>| -> Vec<String> {
            tools.into_iter().map(|t| t.name.into_owned()).collect()
        };
        let (first, next) = server.page(None, None).expect("a page");
        assert_eq!(
            (names(first), next.as_deref()),
            (vec!["hello".into(), "bye".into()], Some("2"))
        );
        let (last, next) = server.page(Some("2"), None).expect("a page");
        assert_eq!((names(last), next), (vec!["hello2".to_owned()], None));
        assert!(server.page(Some("9"), None).is_err());
        assert!(server.page(Some("x"), None).is_err());
    }

    /// Say hello again.
    #[crate::tool(name = "hello2")]
    async fn hello_again() -> String {
        "hello".into()
    }

    #[test]
    fn json_results_carry_structured_content() {
        let result = ToolResult {
            content: vec![ContentBlock::text("{\"n\":1}")],
            details: Some(json!({"n": 1})),
            ..ToolResult::default()
        };
        let structured = mcp_result(result.clone(), true);
        assert_eq!(structured.structured_content, Some(json!({"n": 1})));
        assert_eq!(structured.is_error, Some(false));
        assert_eq!(mcp_result(result, false).structured_content, None);
        let error = mcp_result(ToolResult::error("bad"), true);
        assert_eq!(
            (error.structured_content, error.is_error),
            (None, Some(true))
        );
        // A `Json<T>` result is sent as structured content, output schema or not.
        let typed =
            crate::tool::IntoToolResult::into_tool_result(crate::tool::Json(json!({"n": 1})));
        assert_eq!(
            mcp_result(typed, false).structured_content,
            Some(json!({"n": 1}))
        );
        // A tool's own structured content is sent when it is an object, never otherwise.
        let mut read = ToolResult::text("x");
        read.structured_content = Some(json!("x"));
        assert_eq!(mcp_result(read, false).structured_content, None);
    }
}
