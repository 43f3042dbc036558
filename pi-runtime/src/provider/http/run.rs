//! One response, from the request to `done` or `error`: send (with retries), then read the
//! body piece by piece into the SSE decoder, hand each event to the wire API's parser, and
//! turn every failure (a limit, a dropped connection, a malformed event, the run's signal)
//! into the message's `error` ending.

use futures::stream::{self, StreamExt};
use tokio_util::sync::CancellationToken;

use super::transport::{self, Clock, Expired, HttpRequest, Transport, Wording, seconds};
use crate::error_chain::chain;
use crate::message::StopReason;
use crate::provider::wire::StreamParser;
use crate::sse::{SseDecoder, SseError, byte_size};
use crate::stream::AssistantEventStream;
use crate::stream::MessageWriter;

use crate::aborted::REQUEST_ABORTED as ABORTED;

/// Where the response stands.
enum Phase {
    /// The request could not even be built.
    Invalid(String),
    Send(Box<(Transport, HttpRequest)>),
    /// A response that has come (a recorded one): its status and type are checked next.
    Answered(Box<(reqwest::Response, Wording)>),
    /// Reading the body of an answered request.
    Read(Box<reqwest::Response>),
    /// Reading a body that was pushed whole (a replay).
    Drain,
    Over,
}

pub(super) struct Run {
    output: MessageWriter,
    parser: Box<dyn StreamParser>,
    decoder: SseDecoder,
    clock: Clock,
    phase: Phase,
    signal: CancellationToken,
    /// Body bytes read, and the most a response may have (`HttpOptions::max_response_bytes`).
    received: u64,
    max_response_bytes: u64,
    /// The body went past the limit: the events before it are handed out, then it fails.
    over_limit: bool,
}

impl Run {
    /// A response to `request`, sent when the stream is first polled, whose body may have at
    /// most `max_response_bytes`.
    pub(super) fn send(
        output: MessageWriter,
        parser: Box<dyn StreamParser>,
        decoder: SseDecoder,
        max_response_bytes: u64,
        clock: Clock,
        request: Result<(Transport, HttpRequest), String>,
        signal: CancellationToken,
    ) -> Self {
        let phase = match request {
            Ok(send) => Phase::Send(Box::new(send)),
            Err(message) => Phase::Invalid(message),
        };
        Run {
            output,
            parser,
            decoder,
            clock,
            phase,
            signal,
            received: 0,
            max_response_bytes,
            over_limit: false,
        }
    }

    /// A response that has already come, read as if it had just arrived over the network
    /// (the same checks of its status and type, the same limits; no cancellation).
    pub(super) fn answered(
        output: MessageWriter,
        parser: Box<dyn StreamParser>,
        decoder: SseDecoder,
        max_response_bytes: u64,
        clock: Clock,
        response: reqwest::Response,
        wording: Wording,
    ) -> Self {
        Run {
            output,
            parser,
            decoder,
            clock,
            phase: Phase::Answered(Box::new((response, wording))),
            signal: CancellationToken::new(),
            received: 0,
            max_response_bytes,
            over_limit: false,
        }
    }

    /// A response whose whole body is already in `decoder` (no limits, no cancellation).
    pub(super) fn replay(
        mut output: MessageWriter,
        parser: Box<dyn StreamParser>,
        decoder: SseDecoder,
        clock: Clock,
    ) -> Self {
        output.start();
        Run {
            output,
            parser,
            decoder,
            clock,
            phase: Phase::Drain,
            signal: CancellationToken::new(),
            received: 0,
            max_response_bytes: u64::MAX,
            over_limit: false,
        }
    }

    /// The response's events, ending with `done` or `error`.
    pub(super) fn events(self) -> AssistantEventStream {
        // Boxed, so each event moves a pointer rather than the whole parser state.
        stream::unfold(Box::new(self), |mut run| async move {
            loop {
                if let Some(event) = run.output.pop_event() {
                    return Some((event, run));
                }
                if run.output.is_settled() {
                    return None;
                }
                run.step().await;
            }
        })
        .boxed()
    }

    /// Advance until at least one event is queued or the response settled.
    async fn step(&mut self) {
        if self.signal.is_cancelled() {
            self.output.fail(StopReason::Aborted, ABORTED);
            return;
        }
        match std::mem::replace(&mut self.phase, Phase::Over) {
            Phase::Invalid(message) => self.output.fail(StopReason::Error, message),
            Phase::Send(send) => self.open(*send).await,
            Phase::Answered(answered) => {
                let (response, wording) = *answered;
                let checked = transport::answered(response, &self.clock, &wording).await;
                self.opened(checked.map_err(|failure| Some(failure.message)));
            }
            Phase::Read(response) => self.read(response).await,
            Phase::Drain => {
                if self.next_event() {
                    self.phase = Phase::Drain;
                } else if !self.output.is_settled() {
                    self.end();
                }
            }
            Phase::Over => {}
        }
    }

    async fn open(&mut self, (transport, request): (Transport, HttpRequest)) {
        // The deadline counts from the first poll, not from when the stream was made.
        self.clock.restart();
        let opened = tokio::select! {
            biased;
            () = self.signal.cancelled() => Err(None),
            opened = transport.open(&request, &self.clock) => opened.map_err(Some),
        };
        self.opened(opened);
    }

    /// The response came (`Ok`), or the request failed (`None`: it was cancelled).
    fn opened(&mut self, opened: Result<reqwest::Response, Option<String>>) {
        match opened {
            Ok(response) => {
                self.output.start();
                self.phase = Phase::Read(Box::new(response));
            }
            Err(Some(message)) => self.output.fail(StopReason::Error, message),
            Err(None) => self.output.fail(StopReason::Aborted, ABORTED),
        }
    }

    /// Hand out the next decoded event, or read the next piece of the body.
    async fn read(&mut self, mut response: Box<reqwest::Response>) {
        if self.next_event() {
            self.phase = Phase::Read(response);
            return;
        }
        if self.output.is_settled() {
            return;
        }
        if self.over_limit {
            let limit = usize::try_from(self.max_response_bytes).unwrap_or(usize::MAX);
            let message = format!(
                "The response exceeds the limit of {} (HttpOptions::max_response_bytes)",
                byte_size(limit)
            );
            return self.output.fail(StopReason::Error, message);
        }
        let piece = tokio::select! {
            biased;
            () = self.signal.cancelled() => {
                self.output.fail(StopReason::Aborted, ABORTED);
                return;
            }
            piece = self.clock.limit(response.chunk()) => piece,
        };
        let failure = match piece {
            Ok(Ok(Some(piece))) => {
                // Only up to the limit: an endless stream would otherwise fill memory long
                // before its deadline (9 GB in 20 s on loopback).
                let room = self.max_response_bytes.saturating_sub(self.received);
                let kept = piece.len().min(usize::try_from(room).unwrap_or(usize::MAX));
                self.received += kept as u64;
                self.over_limit = kept < piece.len();
                self.decoder.push_bytes(&piece[..kept]);
                self.phase = Phase::Read(response);
                return;
            }
            Ok(Ok(None)) => return self.end(),
            Ok(Err(error)) => format!("Connection dropped mid-stream: {}", chain(&error)),
            Err(Expired::Silence) => format!(
                "Read timed out: no data from the server for {}",
                seconds(self.clock.read_timeout())
            ),
            Err(Expired::Deadline) => self.clock.deadline_message(),
        };
        self.output.fail(StopReason::Error, failure);
    }

    /// Feed the parser the next complete event: `false` when none is buffered (or the
    /// response failed).
    fn next_event(&mut self) -> bool {
        let result = match self.decoder.next_event() {
            Ok(None) => return false,
            // An event without data is not dispatched (WHATWG).
            Ok(Some(event)) => match event.data {
                Some(data) => self.parser.event(&mut self.output, event.name, data),
                None => Ok(()),
            },
            Err(error) => Err(decode_failure(&error)),
        };
        match result {
            Ok(()) => true,
            Err(message) => {
                self.output.fail(StopReason::Error, message);
                false
            }
        }
    }

    /// The body ended.
    fn end(&mut self) {
        let ended = self
            .decoder
            .finish()
            .map_err(|error| decode_failure(&error))
            .and_then(|()| self.parser.end(&mut self.output));
        match ended {
            Ok(reason) => self.output.done(reason),
            Err(message) => self.output.fail(StopReason::Error, message),
        }
    }
}

/// The `errorMessage` of a body the decoder rejects.
fn decode_failure(error: &SseError) -> String {
    match error {
        SseError::TooLarge(_) => format!("{error} (HttpOptions::max_event_bytes)"),
        SseError::InvalidUtf8 { .. } => error.to_string(),
    }
}
