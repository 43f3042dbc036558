//! The connections of [`serve_http`](crate::mcp::McpServer::serve_http): at most so many at once,
//! below the process's descriptor limit with a reserve, and when full, the connection doing
//! least is shed to make room for the new one.
//!
//! Without a cap, slow clients that never finish a request take every descriptor; `accept`
//! then fails (axum waits a second and tries again) and a legitimate client waits as long
//! as they hold on. Which connection gives way: first one whose request has not arrived
//! (a slow client, oldest first), then the one idle longest between requests; never one
//! whose request is being answered. When every connection is answering a request, the new
//! one is closed instead.
//!
//! Nor may a connection that is answering nothing stay open for ever: one whose request has
//! not fully arrived (headers or body sent a byte at a time), or that has sat idle between
//! requests, is closed once it has been so for the idle timeout.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, BodyDataStream, Bytes};
use axum::extract::connect_info::Connected;
use axum::extract::{ConnectInfo, Request};
use axum::middleware::Next;
use axum::response::Response;
use axum::serve::{IncomingStream, Listener};
use futures::Stream;
use futures::task::AtomicWaker;
use nix::sys::resource::{Resource, getrlimit};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// Descriptors kept for everything but connections, at least: files, pipes, the processes
/// tools start, and the connection accepted while another is shed.
const RESERVE_MIN: u64 = 64;

/// The longest an accept waits for a shed connection to close.
const ROOM_WAIT: Duration = Duration::from_secs(1);

/// The default cap: the soft descriptor limit less a reserve of an eighth of it, or
/// [`RESERVE_MIN`] if more.
pub(super) fn default_max_connections() -> usize {
    // Without the limit (no `getrlimit`), the usual default of Linux.
    let soft = getrlimit(Resource::RLIMIT_NOFILE).map_or(1024, |(soft, _)| soft);
    let reserve = (soft / 8).max(RESERVE_MIN);
    usize::try_from(soft.saturating_sub(reserve))
        .unwrap_or(usize::MAX)
        .max(1)
}

/// The address of the client that sent `request`, when the server knows it: ours, or
/// axum's `into_make_service_with_connect_info::<SocketAddr>()`.
pub(super) fn client_ip(request: &Request) -> Option<IpAddr> {
    let extensions = request.extensions();
    extensions
        .get::<ConnectInfo<Peer>>()
        .map(|ConnectInfo(peer)| peer.addr.ip())
        .or_else(|| {
            extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|ConnectInfo(addr)| addr.ip())
        })
}

/// A TCP listener that keeps at most `max` connections open.
pub(super) struct Limited {
    inner: TcpListener,
    max: usize,
    table: Arc<Mutex<Table>>,
    /// Told each time a connection closes.
    closed: Arc<Notify>,
}

impl Limited {
    /// The listener, and a task that closes connections answering nothing for `idle`; it
    /// ends with the listener and its connections.
    pub(super) fn new(inner: TcpListener, max: usize, idle: Duration) -> Self {
        let table = Arc::default();
        tokio::spawn(close_idle(Arc::downgrade(&table), idle));
        Limited {
            inner,
            max: max.max(1),
            table,
            closed: Arc::default(),
        }
    }
}

/// Every so often (a tenth of `idle`, at least every second), close the connections that
/// have answered nothing for `idle`.
async fn close_idle(table: Weak<Mutex<Table>>, idle: Duration) {
    let period = (idle / 10).clamp(Duration::from_millis(10), Duration::from_secs(1));
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(table) = table.upgrade() else { return };
        let table = table.lock().unwrap_or_else(PoisonError::into_inner);
        for conn in table.open.values() {
            let activity = conn.activity();
            if activity.busy == 0 && activity.idle_since.elapsed() >= idle {
                conn.shed();
            }
        }
    }
}

/// The open connections, by number.
#[derive(Default)]
struct Table {
    next: u64,
    open: HashMap<u64, Arc<Conn>>,
}

impl Table {
    /// The connection to shed: not answering a request, not shed already; one whose
    /// request has not arrived before one that has had an answer, and the longest idle
    /// first.
    fn victim(&self) -> Option<&Arc<Conn>> {
        self.open
            .values()
            .filter(|conn| !conn.shed.load(Ordering::SeqCst))
            .filter_map(|conn| {
                let activity = conn.activity();
                (activity.busy == 0).then_some((conn, activity.requests > 0, activity.idle_since))
            })
            .min_by_key(|(_, answered, idle_since)| (*answered, *idle_since))
            .map(|(conn, _, _)| conn)
    }
}

/// One connection, as the listener and its requests see it.
#[derive(Debug)]
pub(super) struct Conn {
    activity: Mutex<Activity>,
    shed: AtomicBool,
    /// The task reading or writing the connection, to wake when it is shed.
    waker: AtomicWaker,
}

#[derive(Debug, Clone, Copy)]
struct Activity {
    /// Requests begun.
    requests: u64,
    /// Requests being answered.
    busy: usize,
    /// When the connection opened or last finished an answer.
    idle_since: Instant,
}

impl Conn {
    fn activity(&self) -> Activity {
        *self.activity.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn shed(&self) {
        self.shed.store(true, Ordering::SeqCst);
        self.waker.wake();
    }

    fn check(&self, cx: &Context<'_>) -> io::Result<()> {
        self.waker.register(cx.waker());
        if self.shed.load(Ordering::SeqCst) {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "the server closed the connection: it was idle, or made room for another",
            ));
        }
        Ok(())
    }
}

impl Limited {
    /// A place in the table for a new connection, made by shedding another when full;
    /// `None` when none can be shed.
    fn admit(&self) -> Option<(Arc<Conn>, u64)> {
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        if table.open.len() >= self.max {
            table.victim()?.shed();
        }
        let conn = Arc::new(Conn {
            activity: Mutex::new(Activity {
                requests: 0,
                busy: 0,
                idle_since: Instant::now(),
            }),
            shed: AtomicBool::new(false),
            waker: AtomicWaker::new(),
        });
        let id = table.next;
        table.next += 1;
        table.open.insert(id, Arc::clone(&conn));
        Some((conn, id))
    }

    /// Wait until a connection shed for the one just accepted has closed. It closes when its
    /// task next runs; accepting on before then would outrun the closes and spend the
    /// reserve. A connection slow to close holds the next accept a second at most.
    async fn wait_for_room(&self) {
        loop {
            let over = self
                .table
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .open
                .len()
                > self.max;
            if !over {
                return;
            }
            if tokio::time::timeout(ROOM_WAIT, self.closed.notified())
                .await
                .is_err()
            {
                return;
            }
        }
    }
}

impl Listener for Limited {
    type Io = Tracked;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Tracked, SocketAddr) {
        loop {
            // axum's own accept: it waits and tries again on errors such as `EMFILE`.
            let (stream, addr) = Listener::accept(&mut self.inner).await;
            // Answers are small writes (an SSE event, then the end of the chunked body);
            // with Nagle's algorithm each would wait for the client's delayed ACK.
            if let Err(error) = stream.set_nodelay(true) {
                tracing::debug!(%addr, %error, "TCP_NODELAY could not be set");
            }
            let Some((conn, id)) = self.admit() else {
                // Every connection is answering a request: this one waits for none.
                tracing::warn!(%addr, "MCP server full: a new connection was refused");
                continue;
            };
            let tracked = Tracked {
                stream,
                conn,
                id,
                table: Arc::clone(&self.table),
                closed: Arc::clone(&self.closed),
            };
            self.wait_for_room().await;
            return (tracked, addr);
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

/// An accepted connection; it fails its next read or write once shed, and leaves the table
/// when dropped (its descriptor closed).
pub(super) struct Tracked {
    stream: TcpStream,
    conn: Arc<Conn>,
    id: u64,
    table: Arc<Mutex<Table>>,
    closed: Arc<Notify>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.table
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .open
            .remove(&self.id);
        self.closed.notify_one();
    }
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.conn.check(cx)?;
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.conn.check(cx)?;
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.conn.check(cx)?;
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// The client's address and its connection, for each request.
#[derive(Debug, Clone)]
pub(super) struct Peer {
    addr: SocketAddr,
    conn: Arc<Conn>,
}

impl Connected<IncomingStream<'_, Limited>> for Peer {
    fn connect_info(stream: IncomingStream<'_, Limited>) -> Self {
        Peer {
            addr: *stream.remote_addr(),
            conn: Arc::clone(&stream.io().conn),
        }
    }
}

/// The layer, after the body check: a request whose body has arrived makes its connection
/// busy until its answer has been sent (or dropped).
pub(super) async fn track(request: Request, next: Next) -> Response {
    let Some(ConnectInfo(peer)) = request.extensions().get::<ConnectInfo<Peer>>().cloned() else {
        return next.run(request).await;
    };
    let busy = Busy::new(peer.conn);
    let response = next.run(request).await;
    response.map(|body| {
        Body::from_stream(Answering {
            body: body.into_data_stream(),
            busy: Some(busy),
        })
    })
}

/// A request being answered on its connection.
struct Busy(Arc<Conn>);

impl Busy {
    fn new(conn: Arc<Conn>) -> Self {
        {
            let mut activity = conn.activity.lock().unwrap_or_else(PoisonError::into_inner);
            activity.requests += 1;
            activity.busy += 1;
        }
        Busy(conn)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let mut activity = self
            .0
            .activity
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        activity.busy -= 1;
        activity.idle_since = Instant::now();
    }
}

/// An answer's body; its connection is busy until the body ends or is dropped.
struct Answering {
    body: BodyDataStream,
    busy: Option<Busy>,
}

impl Stream for Answering {
    type Item = Result<Bytes, axum::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = Pin::new(&mut self.body).poll_next(cx);
        if let Poll::Ready(None) = polled {
            self.busy = None;
        }
        polled
    }
}
