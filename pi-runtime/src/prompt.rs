//! The system prompt's tool section (SPEC §8).
//!
//! INTERFACE STUB: the product work replaces the body.

use std::sync::Arc;

use crate::tool::ToolDefinition;

/// The `Available tools:` / `Guidelines:` section for the active tools, in activation order,
/// plus prompt-level guidelines (SPEC §8.2). No trailing newline.
pub fn tool_section(tools: &[Arc<dyn ToolDefinition>], prompt_guidelines: &[String]) -> String {
    let _ = (tools, prompt_guidelines);
    String::new()
}
