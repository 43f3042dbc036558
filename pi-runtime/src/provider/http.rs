//! HTTP transport: reqwest, SSE, retry with backoff, timeouts, failures as messages.
