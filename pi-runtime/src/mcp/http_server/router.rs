//! The streamable HTTP endpoint as an axum router: rmcp's service for the tool server behind
//! the layers [`HttpServing`] configures, in the order a request meets them.

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use super::sessions::{self, Sessions};
use super::{HttpServing, cluster, connections, first_write, origins, parse_error};
use crate::mcp::McpServer;
use crate::mcp::auth::{self, Gate};

impl McpServer {
    /// The streamable HTTP endpoint as an axum router serving `path` (for example `/mcp`),
    /// to merge into an application's own router. Only loopback `Host`s (`localhost`,
    /// `127.0.0.1`, `[::1]`, any port) are accepted, and only browser pages of those origins
    /// or of [`HttpServing::with_allowed_origins`], which protects a local server from DNS
    /// rebinding; behind a real host name, name it with [`HttpServing::with_allowed_hosts`].
    ///
    /// Sessions are capped as [`HttpServing::with_session_limits`] says (per client only when
    /// served with `into_make_service_with_connect_info::<SocketAddr>()`), and a client that
    /// hangs up in the middle of a call has the call cancelled. Connections are the
    /// application's to cap: [`HttpServing::with_max_connections`] and
    /// [`HttpServing::with_connection_idle_timeout`] are [`serve_http`](Self::serve_http)'s.
    ///
    /// ```
    /// use pi_runtime::mcp::{HttpServing, McpServer};
    /// use pi_runtime::tool;
    ///
    /// /// Add two numbers.
    /// #[tool]
    /// async fn add(a: f64, b: f64) -> String {
    ///     (a + b).to_string()
    /// }
    ///
    /// # fn main() -> Result<(), pi_runtime::mcp::McpError> {
    /// let server = McpServer::new((Add,))?;
    /// let options = HttpServing::default().with_allowed_hosts(["tools.example.com"]);
    /// let app = axum::Router::new()
    ///     .route("/health", axum::routing::get(|| async { "ok" }))
    ///     .merge(server.router("/mcp", options));
    /// # let _ = app;
    /// # Ok(())
    /// # }
    /// ```
    pub fn router(&self, path: &str, options: HttpServing) -> axum::Router {
        let config = match &options.hosts {
            Some(hosts) => StreamableHttpServerConfig::default().with_allowed_hosts(hosts.clone()),
            None => StreamableHttpServerConfig::default(),
        };
        router(self, path, config, None, &options)
    }
}

/// The endpoint of `server` at `path`, under `config`'s hosts; `bound` is the address of a
/// server bound to one: its pages' origin, and its resource URI when the authentication
/// settings name none.
pub(super) fn router(
    server: &McpServer,
    path: &str,
    config: StreamableHttpServerConfig,
    bound: Option<SocketAddr>,
    options: &HttpServing,
) -> axum::Router {
    let server = server.clone();
    let max_body = options.max_body;
    let origins = origins::allowed_origins(&options.origins, &config.allowed_hosts, bound);
    let config = config
        .with_max_request_body_bytes(max_body)
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        // A request of the 2026-07-28 revision that sends nothing before its answer (no
        // progress) is answered as plain JSON rather than as an event stream of one event.
        .with_json_response(true);
    let sessions = Sessions::new(options.sessions);
    let service =
        StreamableHttpService::new(move || Ok(server.for_session()), sessions.manager(), config);
    // A wildcard address is no URI a client reaches.
    let resource = bound
        .filter(|addr| !addr.ip().is_unspecified())
        .map(|addr| format!("http://{addr}{path}"));
    let gate = options
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
    if let Some(instances) = &options.cluster {
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
