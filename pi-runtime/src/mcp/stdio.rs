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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::AsyncReadExt;

    use super::*;
    use crate::mcp::answers::ClientAnswers;
    use crate::mcp::listing::Limits;

    /// Read all of `input` through a limit of `max` bytes a line, `chunk` bytes at a time;
    /// the error's text if the limit is passed.
    async fn read(input: &[u8], max: usize, chunk: usize) -> Result<(), String> {
        let limits = Limits {
            max_tools: 1,
            max_pages: 1,
            max_tool_size: 1,
            timeout: Duration::from_secs(1),
        };
        let shared = Shared::new("s".to_owned(), limits, None, ClientAnswers::default());
        let mut lines = BoundedLines::new(input, max, shared);
        let mut buffer = vec![0; chunk];
        loop {
            match lines.read(&mut buffer).await {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(error) => return Err(error.to_string()),
            }
        }
    }

    #[tokio::test]
    async fn a_line_may_take_the_limit_with_its_newline_and_no_more() {
        for chunk in [1, 3, 64] {
            assert_eq!(read(b"12345678\n123456789\n1", 10, chunk).await, Ok(()));
            assert_eq!(
                read(b"1\n1234567890\n1", 10, chunk).await,
                Err(
                    "the server sent a message larger than 10 bytes, the most the connection \
                     takes in one message"
                        .to_owned()
                ),
                "{chunk} bytes a read"
            );
            // A line without its newline yet counts as far as it goes.
            assert!(read(b"12345678901", 10, chunk).await.is_err());
        }
    }
}
