//! Tools written by a crate that depends on pi-runtime alone: no serde, schemars or
//! serde_json in its `Cargo.toml`. If `#[tool]` or `#[tool_args]` expanded to a path outside
//! `::pi_runtime`, this crate would not compile.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pi_runtime::{Args, State, ToolContext, ToolError, ToolResult, tool, tool_args};

/// Execute a bash command in the working directory.
#[tool(
    snippet = "Execute bash commands (ls, grep, find, etc.)",
    mode = "sequential"
)]
pub async fn bash(
    /// Bash command to execute
    command: String,
    /// Timeout in seconds (optional, no default timeout)
    timeout: Option<f64>,
    ctx: ToolContext,
) -> Result<String, ToolError> {
    if ctx.is_cancelled() {
        return Err(ToolError::new("Command aborted"));
    }
    Ok(match timeout {
        Some(seconds) => format!("{command} (timeout {seconds})"),
        None => command,
    })
}

/// The final analysis of one function (seed 2's `FunctionAnalysis`).
#[tool_args]
#[derive(Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FunctionAnalysis {
    /// The function's name.
    pub name: String,
    /// Its parameter names.
    pub parameters: Vec<String>,
    /// One sentence on what it does.
    pub summary: String,
    /// What it does with an empty input; null when unsure.
    pub empty_input_behavior: Option<String>,
    /// A quote from the source backing the analysis.
    pub evidence: String,
}

/// Submit the final analysis of the current function; only one valid result is accepted.
#[tool(strict = "prefer", mode = "sequential", label = "Submit analysis")]
pub async fn submit_analysis(
    State(accepted): State<Arc<AtomicBool>>,
    Args(analysis): Args<FunctionAnalysis>,
) -> Result<ToolResult, ToolError> {
    if !analysis.summary.contains(&analysis.name) && analysis.evidence.is_empty() {
        return Err(ToolError::new("evidence must quote the source"));
    }
    if accepted.swap(true, Ordering::SeqCst) {
        return Err(ToolError::new("already accepted"));
    }
    Ok(ToolResult::text("accepted").with_terminate(true))
}

#[cfg(test)]
mod tests {
    use pi_runtime::{AgentTool, ConstrainedSampling, Strictness, ToolRegistry};

    use super::*;

    #[test]
    fn bash_schema() {
        assert_eq!(
            Bash.definition().parameters.to_string(),
            r#"{"type":"object","properties":{"command":{"type":"string","description":"Bash command to execute"},"timeout":{"type":"number","description":"Timeout in seconds (optional, no default timeout)"}},"required":["command"],"additionalProperties":false}"#
        );
        assert_eq!(
            Bash.definition().description,
            "Execute a bash command in the working directory."
        );
    }

    #[test]
    fn args_schema() {
        let tool = SubmitAnalysis::new(Arc::new(AtomicBool::new(false)));
        assert_eq!(
            tool.definition().parameters.to_string(),
            r#"{"type":"object","properties":{"name":{"type":"string","description":"The function's name."},"parameters":{"type":"array","items":{"type":"string"},"description":"Its parameter names."},"summary":{"type":"string","description":"One sentence on what it does."},"emptyInputBehavior":{"type":"string","description":"What it does with an empty input; null when unsure."},"evidence":{"type":"string","description":"A quote from the source backing the analysis."}},"required":["name","parameters","summary","evidence"],"additionalProperties":false}"#
        );
        assert_eq!(
            tool.definition().constrained_sampling,
            Some(ConstrainedSampling::JsonSchema {
                strict: Strictness::Prefer
            })
        );
        assert_eq!(tool.label(), "Submit analysis");
    }

    #[test]
    fn registers_with_state() {
        let accepted = Arc::new(AtomicBool::new(false));
        let registry = ToolRegistry::new((Bash, SubmitAnalysis::new(accepted))).unwrap();
        assert_eq!(
            registry.names().collect::<Vec<_>>(),
            ["bash", "submit_analysis"]
        );
    }
}
