//! Stream parsing (SSE events -> assistant-message events).
