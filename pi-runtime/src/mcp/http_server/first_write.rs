//! One write for a quick answer on an event stream.
//!
//! rmcp answers a POST of a session with an event stream that opens with a priming event (an
//! event id to resume from, and a retry time), then carries the answer. Sent as they come,
//! the response head and the priming event go out in one write and the answer in a second, so
//! every call costs the client two wake-ups and two packets. Holding the head until the next
//! event is ready, for at most [`HOLD`], lets hyper write a quick call's whole answer at once.
//! A slow call loses nothing but that moment before its head.

use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::Response;
use futures::{StreamExt, stream};

/// How long a head waits for the event after the priming one.
const HOLD: Duration = Duration::from_millis(5);

/// How many events are held: the priming event and the one after it.
const HELD_EVENTS: usize = 2;

/// Middleware: hold an event stream's head until its first two events, or [`HOLD`], then
/// send them together.
pub(super) async fn hold_head(request: Request, next: Next) -> Response {
    let post = request.method() == Method::POST;
    let response = next.run(request).await;
    if post { hold(response).await } else { response }
}

/// `response` with its head held until its first two events or [`HOLD`], if it is an event
/// stream.
async fn hold(response: Response) -> Response {
    if !is_event_stream(&response) {
        return response;
    }
    let (parts, body) = response.into_parts();
    let mut body = body.into_data_stream();
    let mut held = Vec::with_capacity(HELD_EVENTS);
    let deadline = tokio::time::sleep(HOLD);
    tokio::pin!(deadline);
    while held.len() < HELD_EVENTS {
        tokio::select! {
            biased;
            event = body.next() => match event {
                Some(event) => held.push(event),
                None => break,
            },
            () = &mut deadline => break,
        }
    }
    let body = stream::iter(held).chain(body);
    Response::from_parts(parts, Body::from_stream(body))
}

fn is_event_stream(response: &Response<Body>) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"text/event-stream"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Bytes;

    fn events(delays: &'static [u64]) -> Response {
        let events = stream::iter(delays).then(|&delay| async move {
            tokio::time::sleep(Duration::from_millis(delay)).await;
            Ok::<_, std::io::Error>(Bytes::from(format!("data: {delay}\n\n")))
        });
        Response::builder()
            .header(header::CONTENT_TYPE, "text/event-stream")
            .body(Body::from_stream(events))
            .expect("a valid response")
    }

    async fn served(delays: &'static [u64]) -> (Duration, Vec<Bytes>) {
        let started = tokio::time::Instant::now();
        let response = hold(events(delays)).await;
        let head_after = started.elapsed();
        let mut body = response.into_body().into_data_stream();
        let mut chunks = Vec::new();
        while let Some(chunk) = body.next().await {
            chunks.push(chunk.expect("no body error"));
        }
        (head_after, chunks)
    }

    #[tokio::test(start_paused = true)]
    async fn a_quick_answer_comes_with_the_head() {
        let (head_after, chunks) = served(&[0, 1, 0]).await;
        assert_eq!(head_after, Duration::from_millis(1));
        assert_eq!(chunks, ["data: 0\n\n", "data: 1\n\n", "data: 0\n\n"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_answer_does_not_hold_the_head_past_the_hold() {
        let (head_after, chunks) = served(&[0, 60_000]).await;
        assert_eq!(head_after, HOLD);
        assert_eq!(chunks, ["data: 0\n\n", "data: 60000\n\n"]);
    }
}
