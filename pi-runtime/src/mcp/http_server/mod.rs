//! The tool server over streamable HTTP: [`HttpServing`], the settings of the HTTP side
//! (sessions, connections, authentication, hosts and origins, body size, idle connections, a
//! cluster); the axum router that puts them in front of rmcp's service
//! ([`McpServer::router`]); and a server bound to an address ([`McpServer::serve_http`],
//! [`McpHttpServer`]).

mod cluster;
mod connections;
mod first_write;
mod origins;
mod parse_error;
mod posted;
mod router;
mod serve;
mod sessions;

use std::sync::Arc;
use std::time::Duration;

use super::auth::Authentication;
#[cfg(doc)]
use super::{McpError, McpServer};

pub use cluster::Cluster;
pub(in crate::mcp) use posted::{Posted, refusal};
pub use serve::McpHttpServer;
pub use sessions::SessionLimits;

/// The largest POST body streamable HTTP reads, by default: 4 MiB.
pub const DEFAULT_MAX_REQUEST_BODY: usize = 4 << 20;

/// How long [`McpServer::serve_http`] keeps a connection that answers nothing, by default.
pub const DEFAULT_CONNECTION_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How the tool server is served over streamable HTTP: what [`McpServer::serve_http`] and
/// [`McpServer::router`] take. What is served (tools, hooks, names, each call's context) is
/// the [`McpServer`]'s.
///
/// The default serves loopback safely: no authentication (which
/// [`serve_http`](McpServer::serve_http) refuses beyond loopback), loopback `Host`s and
/// pages only, [`SessionLimits::default`], bodies up to [`DEFAULT_MAX_REQUEST_BODY`], idle
/// connections closed after [`DEFAULT_CONNECTION_IDLE_TIMEOUT`].
///
/// ```
/// use std::time::Duration;
///
/// use pi_runtime::mcp::auth::{Authentication, Principal, StaticTokens};
/// use pi_runtime::mcp::{HttpServing, McpServer, SessionLimits};
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
/// let tokens = StaticTokens::new()
///     .with_token("a-long-random-service-token", Principal::new("billing"));
/// let options = HttpServing::default()
///     .with_authentication(Authentication::new(tokens))
///     .with_session_limits(SessionLimits::default().with_max_sessions_per_client(8))
///     .with_max_request_body(1 << 20)
///     .with_connection_idle_timeout(Duration::from_secs(30));
/// let server = McpServer::new((Add,))?;
/// let http = server.serve_http("127.0.0.1:0".parse().expect("an address"), options).await?;
/// assert!(http.url().ends_with("/mcp"));
/// http.shutdown().await;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpServing {
    /// Sessions and calls, in total and per client.
    sessions: SessionLimits,
    /// Connections [`McpServer::serve_http`] keeps open; by default, from the descriptor limit.
    max_connections: Option<usize>,
    /// How requests are authenticated; `None`: they are not.
    auth: Option<Authentication>,
    /// Whether [`McpServer::serve_http`] may serve beyond loopback without authentication.
    unauthenticated: bool,
    /// Browser origins accepted besides the server's own (none by default).
    origins: Vec<String>,
    /// The `Host` names accepted; `None`: those of the address served (loopback for a router).
    hosts: Option<Vec<String>>,
    /// The largest POST body read.
    max_body: usize,
    /// How long [`McpServer::serve_http`] keeps a connection that answers nothing.
    connection_idle: Duration,
    /// This instance and its peers, when several serve one endpoint.
    cluster: Option<Arc<Cluster>>,
}

impl Default for HttpServing {
    fn default() -> Self {
        HttpServing {
            sessions: SessionLimits::default(),
            max_connections: None,
            auth: None,
            unauthenticated: false,
            origins: Vec::new(),
            hosts: None,
            max_body: DEFAULT_MAX_REQUEST_BODY,
            connection_idle: DEFAULT_CONNECTION_IDLE_TIMEOUT,
            cluster: None,
        }
    }
}

impl HttpServing {
    /// How many sessions and calls the server keeps open, in total and per client, and how
    /// long an idle session lives (default [`SessionLimits::default`]).
    #[must_use]
    pub fn with_session_limits(mut self, limits: SessionLimits) -> Self {
        self.sessions = limits;
        self
    }

    /// The most connections [`serve_http`](McpServer::serve_http) keeps open at once. When
    /// full, a new connection takes the place of one whose request has not arrived (a slow
    /// client, oldest first), else of the one idle longest; one whose request is being
    /// answered is never closed for it. Default: the process's soft limit of open files, less
    /// an eighth of it (at least 64) kept for everything else. A [`router`](McpServer::router)
    /// is served by the application, which caps its own connections.
    #[must_use]
    pub fn with_max_connections(mut self, max: usize) -> Self {
        self.max_connections = Some(max);
        self
    }

    /// Authenticate every request as `auth` says: a bearer token on each, the scopes each
    /// tool requires, the RFC 9728 metadata ([`auth`](crate::mcp::auth) tells the whole
    /// protocol). The token's [`Principal`](crate::mcp::auth::Principal) is what a
    /// [`McpServer::with_context`] function receives. Stdio is not affected: whoever starts
    /// the process owns it.
    #[must_use]
    pub fn with_authentication(mut self, auth: Authentication) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Let [`serve_http`](McpServer::serve_http) serve an address beyond loopback without
    /// authentication, which it otherwise refuses ([`McpError::Unprotected`]): anyone who
    /// reaches the port can call every tool. Each such start is logged as a warning.
    #[must_use]
    pub fn allow_unauthenticated(mut self) -> Self {
        self.unauthenticated = true;
        self
    }

    /// Browser origins (`https://app.example.com`, with `:*` for any port) whose pages may
    /// call the server, besides its own. A request with any other `Origin` header is
    /// refused with `403`, while clients that send no `Origin` (SDKs, other services) pass.
    ///
    /// The server's own pages are always accepted: those of the names it answers to, over
    /// `http` or `https`. Those are the names given to
    /// [`with_allowed_hosts`](Self::with_allowed_hosts) (on the port given, else any); without
    /// them, on loopback ([`serve_http`](McpServer::serve_http) of a loopback address,
    /// [`router`](McpServer::router)) `localhost`, `127.0.0.1` and `[::1]` on any port, and
    /// for `serve_http` of an address beyond loopback, that address (none for a wildcard
    /// address: allow the names the server is reached by here).
    #[must_use]
    pub fn with_allowed_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// Accept requests for these `Host` names (or `host:port` authorities) only, and pages
    /// they serve (`http` or `https`, on the port given, else any): what a server behind a
    /// real host name sets. By default a [`router`](McpServer::router), and
    /// [`serve_http`](McpServer::serve_http) of a loopback address, accept the loopback names
    /// only (`localhost`, `127.0.0.1`, `[::1]`, any port), which protects a local server from
    /// DNS rebinding; `serve_http` of an address beyond loopback accepts any name.
    #[must_use]
    pub fn with_allowed_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// The largest POST body read (default [`DEFAULT_MAX_REQUEST_BODY`], 4 MiB); a larger one
    /// gets `413`.
    #[must_use]
    pub fn with_max_request_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }

    /// How long [`serve_http`](McpServer::serve_http) keeps a connection open that is
    /// answering nothing: one whose request has not fully arrived (a client sending its
    /// headers a byte at a time), or idle between requests (default a minute). A connection
    /// streaming an answer is never closed for it.
    #[must_use]
    pub fn with_connection_idle_timeout(mut self, timeout: Duration) -> Self {
        self.connection_idle = timeout;
        self
    }

    /// Serve as one instance of several behind a load balancer that need not be sticky: a
    /// request for a session another instance holds is forwarded there, so calls, progress
    /// and cancellation of one session all meet on the instance running them. See
    /// [`Cluster`] for how, and what happens when an instance stops.
    #[must_use]
    pub fn with_cluster(mut self, cluster: Cluster) -> Self {
        self.cluster = Some(Arc::new(cluster));
        self
    }
}
