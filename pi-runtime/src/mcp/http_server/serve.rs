//! A streamable HTTP server bound to an address: the refusal to serve beyond loopback
//! unprotected, the capped listener, and the background task with its shutdown.

use std::net::SocketAddr;
use std::time::Duration;

use rmcp::transport::StreamableHttpServerConfig;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::connections::{self, Limited, Peer};
use super::{HttpServing, router};
use crate::mcp::{McpError, McpServer};

impl McpServer {
    /// Serve streamable HTTP at `http://<addr>/mcp` in a background task, as `options` say.
    /// Bind a loopback address (`127.0.0.1:0` picks a free port) unless the server must be
    /// reachable from other machines.
    ///
    /// Connections are capped below the process's descriptor limit
    /// ([`HttpServing::with_max_connections`]), sessions in total and per client address
    /// ([`HttpServing::with_session_limits`]), and a client that hangs up in the middle of a
    /// call has the call cancelled.
    ///
    /// # Errors
    /// - [`McpError::Unprotected`]: `addr` is not a loopback address, and the options neither
    ///   authenticate ([`HttpServing::with_authentication`]) nor say to serve without
    ///   ([`HttpServing::allow_unauthenticated`]).
    /// - [`McpError::Connect`]: the address cannot be bound.
    pub async fn serve_http(
        &self,
        addr: SocketAddr,
        options: HttpServing,
    ) -> Result<McpHttpServer, McpError> {
        let remote = !addr.ip().is_loopback();
        if remote && options.auth.is_none() {
            if !options.unauthenticated {
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
        let config = match &options.hosts {
            Some(hosts) => config.with_allowed_hosts(hosts.clone()),
            // Bound beyond loopback on purpose: any host name may reach it.
            None if remote => config.disable_allowed_hosts(),
            None => config,
        };
        let router = router::router(self, "/mcp", config, Some(local), &options);
        let max = options
            .max_connections
            .unwrap_or_else(connections::default_max_connections);
        let listener = Limited::new(listener, max, options.connection_idle);
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
