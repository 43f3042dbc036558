//! The texts of work the run's cancellation signal stopped (pi 1.6's wording), written once
//! for everything that stops on it: the agent loop, the model providers, the built-in tools
//! and MCP tools.

/// Every call stopped by the run's cancellation signal, and an extraction that was aborted.
pub(crate) const OPERATION_ABORTED: &str = "Operation aborted";

/// The error of a model request the run's signal stopped, before or while it streamed, as
/// providers word it; the loop writes it itself when the signal fired before a request.
pub(crate) const REQUEST_ABORTED: &str = "Request was aborted";
