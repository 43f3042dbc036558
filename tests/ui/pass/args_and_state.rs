use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use pi_runtime::{Args, State, ToolContext, ToolDefinition, ToolError, ToolResult, tool, tool_args};

/// The final analysis of one function.
#[tool_args]
pub struct FunctionAnalysis {
    /// The function's name.
    pub name: String,
    /// Quotes from the source.
    #[serde(default)]
    pub evidence: Vec<String>,
}

/// Submit the final analysis; only one valid result is accepted.
#[tool(strict = "prefer", mode = "sequential")]
pub async fn submit_analysis(
    State(accepted): State<Arc<AtomicBool>>,
    ctx: ToolContext,
    Args(analysis): Args<FunctionAnalysis>,
) -> Result<ToolResult, ToolError> {
    let _ = (accepted, ctx, analysis.name, analysis.evidence);
    Ok(ToolResult::text("accepted").with_terminate(true))
}

fn assert_tool<T: ToolDefinition + Clone + std::fmt::Debug>() {}

fn main() {
    assert_tool::<SubmitAnalysis>();
    let _tool = SubmitAnalysis::new(Arc::new(AtomicBool::new(false)));
}
