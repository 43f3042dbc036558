//! The reading side of a stdio server: a message over the size limit ends the connection at
//! once, with that as its reason.
//!
//! rmcp's line transport drops a line over its limit, logs it and reads on
//! ([`AsyncRwTransport::with_max_line_length`](rmcp::transport::async_rw::AsyncRwTransport::with_max_line_length)).
//! The request that line answered then waits for its timeout and fails as if the server had
//! said nothing, and which request it was cannot be known without the line. Failing the
//! connection instead answers every waiting request at once with the real cause.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, ReadBuf};

use super::connection::Shared;
use super::errors;

/// A server's standard output, failing once a line reaches `max` bytes (its newline included,
/// as rmcp counts).
pub(super) struct BoundedLines<R> {
    inner: R,
    max: usize,
    /// Bytes of the line being read, so far.
    line: usize,
    shared: Arc<Shared>,
}

impl<R> BoundedLines<R> {
    pub(super) fn new(inner: R, max: usize, shared: Arc<Shared>) -> Self {
        BoundedLines {
            inner,
            max,
            line: 0,
            shared,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        let read = &buf.filled()[before..];
        // Each line that ends in `read`, newline included, then the one it leaves open.
        let (mut longest, mut start) = (0, 0);
        for newline in memchr::memchr_iter(b'\n', read) {
            longest = longest.max(this.line + newline + 1 - start);
            (this.line, start) = (0, newline + 1);
        }
        this.line += read.len() - start;
        let longest = longest.max(this.line);
        if longest > this.max {
            let reason = errors::message_too_large(this.max);
            this.shared.fail(reason.clone());
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, reason)));
        }
        Poll::Ready(Ok(()))
    }
}
