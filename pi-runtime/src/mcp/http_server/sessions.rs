//! What one client may hold of the streamable HTTP server: sessions, capped in total and per
//! client (the token's subject when the server authenticates, else the client's address),
//! each usable only by the subject that opened it, and calls, each cancelled when the
//! connection that waits for its answer goes away.
//!
//! rmcp's session manager opens a session for every `initialize` and keeps it until it is
//! deleted or idle for its keep-alive; nothing bounds how many there are. A call runs until
//! it ends or its session does, whether or not anyone still waits for the answer. This layer
//! sits in front of rmcp's service: it refuses an `initialize` over the caps, and sends the
//! session `notifications/cancelled` (rmcp's own cancellation path) for a request whose
//! response was dropped unfinished.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, BodyDataStream, Bytes};
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::Stream;
use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ClientJsonRpcMessage, ClientNotification,
    RequestId,
};
use rmcp::transport::common::http_header::HEADER_SESSION_ID;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use super::connections::client_ip;
use super::posted::{Posted, refusal};
use crate::mcp::auth::Caller;

/// How many sessions the server keeps open, in total and for one client address, and how
/// long an idle one lives ([`HttpServing::with_session_limits`](super::HttpServing::with_session_limits)).
///
/// An `initialize` over a cap is refused, before any session is made: `429 Too Many
/// Requests` over the client's own, `503 Service Unavailable` over the total, each with a
/// JSON-RPC error saying which. A session deleted or expired frees its place (and its memory)
/// for the next.
///
/// ```
/// use std::time::Duration;
/// use pi_runtime::mcp::SessionLimits;
///
/// let limits = SessionLimits::default()
///     .with_max_sessions(200)
///     .with_max_sessions_per_client(8)
///     .with_idle_timeout(Duration::from_secs(60));
/// assert_eq!(limits.max_sessions, 200);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionLimits {
    /// Sessions open at once, all clients together. Default 1,000.
    pub max_sessions: usize,
    /// Sessions open at once for one client. Default 64. A client is the token's subject when
    /// the server authenticates ([`with_authentication`](super::HttpServing::with_authentication)),
    /// else the client's address where it is known:
    /// [`serve_http`](crate::mcp::McpServer::serve_http), or a router served with axum's
    /// `into_make_service_with_connect_info::<SocketAddr>()`.
    pub max_sessions_per_client: usize,
    /// How long a session lives without a request. Default rmcp's, 5 minutes.
    pub idle_timeout: Duration,
    /// `tools/call` requests running at once, all clients together. Default 256.
    pub max_calls: usize,
    /// `tools/call` requests running at once for one client (counted as sessions are).
    /// Default 32.
    pub max_calls_per_client: usize,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_sessions: 1_000,
            max_sessions_per_client: 64,
            idle_timeout: Duration::from_secs(300),
            max_calls: 256,
            max_calls_per_client: 32,
        }
    }
}

impl SessionLimits {
    /// Set [`max_sessions`](Self::max_sessions).
    #[must_use]
    pub fn with_max_sessions(mut self, max: usize) -> Self {
        self.max_sessions = max;
        self
    }

    /// Set [`max_sessions_per_client`](Self::max_sessions_per_client).
    #[must_use]
    pub fn with_max_sessions_per_client(mut self, max: usize) -> Self {
        self.max_sessions_per_client = max;
        self
    }

    /// Set [`max_calls`](Self::max_calls).
    #[must_use]
    pub fn with_max_calls(mut self, max: usize) -> Self {
        self.max_calls = max;
        self
    }

    /// Set [`max_calls_per_client`](Self::max_calls_per_client).
    #[must_use]
    pub fn with_max_calls_per_client(mut self, max: usize) -> Self {
        self.max_calls_per_client = max;
        self
    }

    /// Set [`idle_timeout`](Self::idle_timeout).
    #[must_use]
    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }
}

/// The sessions of one router: rmcp's manager, and who holds which session.
#[derive(Debug)]
pub(super) struct Sessions {
    manager: Arc<LocalSessionManager>,
    limits: SessionLimits,
    table: Mutex<Table>,
}

/// Who holds a session: the subject of the token that opened it, or, on a server that does
/// not authenticate, the client's address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Holder {
    Subject(Arc<str>),
    Address(IpAddr),
}

impl Holder {
    fn of(request: &Request) -> Option<Holder> {
        match request.extensions().get::<Caller>() {
            Some(caller) => Some(Holder::Subject(Arc::from(
                caller.principal().subject.as_str(),
            ))),
            None => client_ip(request).map(Holder::Address),
        }
    }
}

/// Open sessions by client, and `initialize` requests under way (counted, so concurrent
/// ones cannot pass a cap together); running calls, in total and by client.
#[derive(Debug, Default)]
struct Table {
    sessions: HashMap<Arc<str>, Option<Holder>>,
    pending: usize,
    by_client: HashMap<Holder, usize>,
    calls: usize,
    calls_by_client: HashMap<Holder, usize>,
}

impl Table {
    fn release(&mut self, client: Option<Holder>) {
        let Some(client) = client else { return };
        if let Some(count) = self.by_client.get_mut(&client) {
            *count -= 1;
            if *count == 0 {
                self.by_client.remove(&client);
            }
        }
    }
}

impl Sessions {
    /// rmcp's session manager with `limits`' idle timeout, and the caps in front of it.
    pub(super) fn new(limits: SessionLimits) -> Arc<Self> {
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(limits.idle_timeout);
        Arc::new(Sessions {
            manager: Arc::new(manager),
            limits,
            table: Mutex::default(),
        })
    }

    /// The session manager rmcp's service runs on.
    pub(super) fn manager(&self) -> Arc<LocalSessionManager> {
        Arc::clone(&self.manager)
    }

    /// A place for a new session of `client`, or the response refusing it.
    async fn reserve(
        self: &Arc<Self>,
        client: Option<Holder>,
        id: Option<&RequestId>,
    ) -> Result<Slot, Response> {
        // rmcp forgets a session when it is deleted or expires; so does the table, here.
        let live: HashSet<Arc<str>> = self.manager.sessions.read().await.keys().cloned().collect();
        let mut table = self.table();
        let mut gone = Vec::new();
        table.sessions.retain(|session, client| {
            let kept = live.contains(session);
            if !kept {
                gone.push(client.clone());
            }
            kept
        });
        for client in gone {
            table.release(client);
        }
        let limits = &self.limits;
        if table.sessions.len() + table.pending >= limits.max_sessions {
            let message = format!(
                "The server has {} sessions open, the most it keeps; try again later",
                limits.max_sessions
            );
            return Err(refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                OVER_A_CAP,
                id,
                &message,
            ));
        }
        if let Some(client) = &client {
            let count = table.by_client.entry(client.clone()).or_default();
            if *count >= limits.max_sessions_per_client {
                let message = format!(
                    "This client has {} sessions open, the most one client may have; close one \
                     (DELETE) or let one expire",
                    limits.max_sessions_per_client
                );
                return Err(refusal(
                    StatusCode::TOO_MANY_REQUESTS,
                    OVER_A_CAP,
                    id,
                    &message,
                ));
            }
            *count += 1;
        }
        table.pending += 1;
        Ok(Slot {
            sessions: Arc::clone(self),
            client,
            session: None,
        })
    }

    /// A place for a call of `client`, or the status and message refusing it.
    fn start_call(self: &Arc<Self>, client: Option<Holder>) -> Result<Call, (StatusCode, String)> {
        let limits = &self.limits;
        let mut table = self.table();
        if table.calls >= limits.max_calls {
            let message = format!(
                "The server is running {} calls, the most it runs at once; try again later",
                limits.max_calls
            );
            return Err((StatusCode::SERVICE_UNAVAILABLE, message));
        }
        if let Some(client) = &client {
            let count = table.calls_by_client.entry(client.clone()).or_default();
            if *count >= limits.max_calls_per_client {
                let message = format!(
                    "This client has {} calls running, the most one client may run at once; \
                     wait for one to finish",
                    limits.max_calls_per_client
                );
                return Err((StatusCode::TOO_MANY_REQUESTS, message));
            }
            *count += 1;
        }
        table.calls += 1;
        Ok(Call {
            sessions: Arc::clone(self),
            client,
        })
    }

    /// Whether `subject` may use `session`: a session opened with a token belongs to its
    /// subject. A session the table does not know is rmcp's to refuse.
    fn may_use(&self, session: &str, subject: &str) -> bool {
        match self.table().sessions.get(session) {
            None => true,
            Some(Some(Holder::Subject(holder))) => **holder == *subject,
            Some(_) => false,
        }
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A place taken for a session being initialized: on drop, the session it was bound to
/// joins the table, or, unbound, the place is given back.
struct Slot {
    sessions: Arc<Sessions>,
    client: Option<Holder>,
    session: Option<Arc<str>>,
}

impl Slot {
    fn bind(mut self, session: Arc<str>) {
        self.session = Some(session);
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut table = self.sessions.table();
        table.pending -= 1;
        match self.session.take() {
            Some(session) => {
                table.sessions.insert(session, self.client.take());
            }
            None => table.release(self.client.take()),
        }
    }
}

/// A running call's place, given back on drop (when its answer has been sent or dropped).
struct Call {
    sessions: Arc<Sessions>,
    client: Option<Holder>,
}

impl Drop for Call {
    fn drop(&mut self) {
        let mut table = self.sessions.table();
        table.calls -= 1;
        if let Some(client) = &self.client
            && let Some(count) = table.calls_by_client.get_mut(client)
        {
            *count -= 1;
            if *count == 0 {
                table.calls_by_client.remove(client);
            }
        }
    }
}

/// The JSON-RPC error code of a request refused for one of the server's caps.
const OVER_A_CAP: i32 = -32000;

/// The session a request names (`Mcp-Session-Id`), if any.
pub(super) fn session_id(request: &Request) -> Option<&str> {
    request
        .headers()
        .get(HEADER_SESSION_ID)
        .and_then(|value| value.to_str().ok())
}

/// rmcp's own answer to a request for a session it does not have.
pub(super) fn session_not_found() -> Response {
    (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
}

/// The layer, after the body check (which leaves [`Posted`] in the request's extensions).
pub(super) async fn guard(
    State(sessions): State<Arc<Sessions>>,
    request: Request,
    next: Next,
) -> Response {
    let session = session_id(&request).map(Arc::<str>::from);
    if let (Some(session), Some(caller)) = (&session, request.extensions().get::<Caller>())
        && !sessions.may_use(session, &caller.principal().subject)
    {
        // Another subject's session is not found, as a session that does not exist.
        return session_not_found();
    }
    let posted = (request.method() == Method::POST)
        .then(|| request.extensions().get::<Posted>().cloned())
        .flatten();
    let Some(posted) = posted else {
        return next.run(request).await;
    };
    let call = match &posted.tool {
        Some(_) => match sessions.start_call(Holder::of(&request)) {
            Ok(call) => Some(call),
            Err((status, message)) => {
                return refusal(status, OVER_A_CAP, posted.id.as_ref(), &message);
            }
        },
        None => None,
    };
    match (session, posted) {
        (
            None,
            Posted {
                initialize: true,
                id,
                ..
            },
        ) => {
            let client = Holder::of(&request);
            let slot = match sessions.reserve(client, id.as_ref()).await {
                Ok(slot) => slot,
                Err(refused) => return refused,
            };
            let response = next.run(request).await;
            if let Some(session) = response
                .headers()
                .get(HEADER_SESSION_ID)
                .and_then(|value| value.to_str().ok())
            {
                slot.bind(Arc::from(session));
            }
            response
        }
        (session, Posted { id, .. }) => {
            let hang_up = session
                .zip(id)
                .map(|(session, id)| HangUp::new(sessions.manager(), session, id));
            if hang_up.is_none() && call.is_none() {
                return next.run(request).await;
            }
            // The answer comes in the body; dropping this future or the body before its end
            // means the client hung up. The call's place is taken until then.
            let response = next.run(request).await;
            response.map(|body| {
                Body::from_stream(Watched {
                    body: body.into_data_stream(),
                    hang_up,
                    call,
                })
            })
        }
    }
}

/// Cancels a request in its session when dropped before [`finished`](Self::finished).
struct HangUp {
    manager: Arc<LocalSessionManager>,
    session: Arc<str>,
    request: Option<RequestId>,
}

impl HangUp {
    fn new(manager: Arc<LocalSessionManager>, session: Arc<str>, request: RequestId) -> Self {
        HangUp {
            manager,
            session,
            request: Some(request),
        }
    }

    fn finished(&mut self) {
        self.request = None;
    }
}

impl Drop for HangUp {
    fn drop(&mut self) {
        let Some(request) = self.request.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let manager = Arc::clone(&self.manager);
        let session = Arc::clone(&self.session);
        runtime.spawn(async move {
            let cancelled = CancelledNotification::new(CancelledNotificationParam::new(
                Some(request),
                Some("the client closed the connection".to_owned()),
            ));
            let message = ClientJsonRpcMessage::notification(
                ClientNotification::CancelledNotification(cancelled),
            );
            // A session that is gone has nothing left to cancel.
            let _ = manager.accept_message(&session, message).await;
        });
    }
}

/// A response body that tells its [`HangUp`] when it was read to the end, and gives its
/// call's place back then.
struct Watched {
    body: BodyDataStream,
    hang_up: Option<HangUp>,
    call: Option<Call>,
}

impl Stream for Watched {
    type Item = Result<Bytes, axum::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = Pin::new(&mut self.body).poll_next(cx);
        if let Poll::Ready(None) = polled {
            if let Some(hang_up) = &mut self.hang_up {
                hang_up.finished();
            }
            self.call = None;
        }
        polled
    }
}
