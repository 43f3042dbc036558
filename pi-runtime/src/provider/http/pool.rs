//! The connections of one model: a pool that keeps them open between requests, and what
//! happens when the server closed a pooled one first.
//!
//! A server closes an idle keep-alive connection when it likes (llama.cpp's after 5 s,
//! gateways after their own time). When that close crosses a new request on the wire, the
//! request lands on a socket the server has already given up: nothing was read, nothing
//! will answer, and hyper reports "connection closed before message completed". hyper-util
//! resends a request it never started to write; one it wrote into a dead socket it cannot
//! tell apart from one a server dropped, so it reports it. Here that case is told apart by
//! the connection: if it had already carried a response (it came from the pool) and it
//! closed without a byte of answer, the request is sent once more at once, on a connection
//! of its own. That resend is no retry of the [`RetryPolicy`](super::RetryPolicy): it has
//! no backoff and does not count, as a browser does for a request that failed on a reused
//! connection. A failure on a fresh connection is the server's answer and goes to the
//! policy as before.
//!
//! Connections idle longer than [`HttpOptions::pool_idle_timeout`](super::HttpOptions) are
//! not reused at all, so the common servers' keep-alive (5 s) rarely gets there first.

use std::collections::VecDeque;
use std::error::Error as StdError;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};

use hyper_util::client::legacy::connect::HttpInfo;

use super::HttpOptions;
use crate::error_chain::chain;

/// How many connections that carried a response are remembered: more than a model keeps
/// open at once, so a pooled connection is still known when it fails.
const REMEMBERED: usize = 256;

/// The clients of one model and the connections that have answered.
#[derive(Debug, Clone)]
pub(super) struct Connections {
    pooled: reqwest::Client,
    /// Built on the first resend: one connection per request, never pooled.
    fresh: Arc<OnceLock<Result<reqwest::Client, String>>>,
    connect_timeout: std::time::Duration,
    /// Local addresses of connections that carried a response, newest last.
    answered: Arc<Mutex<VecDeque<SocketAddr>>>,
}

impl Connections {
    /// The pooled client, configured from `options`.
    pub(super) fn new(options: &HttpOptions) -> Result<Self, String> {
        let pooled = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .pool_idle_timeout(options.pool_idle_timeout)
            .build()
            .map_err(|error| format!("Could not build the HTTP client: {}", chain(&error)))?;
        Ok(Connections {
            pooled,
            fresh: Arc::default(),
            connect_timeout: options.connect_timeout,
            answered: Arc::default(),
        })
    }

    /// The client that reuses connections.
    pub(super) fn pooled(&self) -> &reqwest::Client {
        &self.pooled
    }

    /// A client whose every request opens a connection of its own.
    pub(super) fn fresh(&self) -> Result<&reqwest::Client, String> {
        self.fresh
            .get_or_init(|| {
                reqwest::Client::builder()
                    .connect_timeout(self.connect_timeout)
                    .pool_max_idle_per_host(0)
                    .build()
                    .map_err(|error| format!("Could not build the HTTP client: {}", chain(&error)))
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Remember the connection `response` came on: from now on it counts as reused.
    pub(super) fn answered(&self, response: &reqwest::Response) {
        let Some(local) = response
            .extensions()
            .get::<HttpInfo>()
            .map(HttpInfo::local_addr)
        else {
            return;
        };
        let mut answered = self.answered.lock().unwrap_or_else(|e| e.into_inner());
        if answered.contains(&local) {
            return;
        }
        if answered.len() == REMEMBERED {
            answered.pop_front();
        }
        answered.push_back(local);
    }

    /// Whether `error` is a request written on a pooled connection the server had already
    /// closed: the connection had answered before, and it closed (or was reset) without a
    /// byte of response. Such a request never reached the server's code.
    pub(super) fn is_stale(&self, error: &reqwest::Error) -> bool {
        if error.is_connect() || error.is_timeout() || error.is_builder() {
            return false;
        }
        let failure = Failure::of(error);
        failure.closed
            && failure.local.is_some_and(|local| {
                self.answered
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .contains(&local)
            })
    }
}

/// What the source chain of a failed send says.
#[derive(Debug, Default)]
struct Failure {
    /// The connection closed or was reset before any response byte.
    closed: bool,
    /// The local address of the connection the request was written on.
    local: Option<SocketAddr>,
}

impl Failure {
    fn of(error: &reqwest::Error) -> Self {
        let mut failure = Failure::default();
        let mut source: Option<&(dyn StdError + 'static)> = error.source();
        while let Some(error) = source {
            if let Some(client) = error.downcast_ref::<hyper_util::client::legacy::Error>() {
                if client.is_connect() {
                    return Failure::default();
                }
                if let Some(connected) = client.connect_info() {
                    let mut extras = http::Extensions::new();
                    connected.get_extras(&mut extras);
                    failure.local = extras.get::<HttpInfo>().map(HttpInfo::local_addr);
                }
            } else if let Some(hyper) = error.downcast_ref::<hyper::Error>() {
                failure.closed |= hyper.is_incomplete_message();
            } else if let Some(io) = error.downcast_ref::<std::io::Error>() {
                failure.closed |= matches!(
                    io.kind(),
                    std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::ConnectionAborted
                        | std::io::ErrorKind::BrokenPipe
                );
            }
            source = error.source();
        }
        failure
    }
}
