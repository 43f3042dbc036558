use pi_runtime::{ToolContext, ToolDefinition, ToolError, tool};

/// Execute a bash command in the working directory.
#[tool(snippet = "Execute bash commands (ls, grep, find, etc.)", mode = "sequential")]
async fn bash(
    /// Bash command to execute
    command: String,
    /// Timeout in seconds (optional, no default timeout)
    timeout: Option<f64>,
    ctx: ToolContext,
) -> Result<String, ToolError> {
    let _ = (timeout, ctx);
    Ok(command)
}

fn assert_tool<T: ToolDefinition>() {}

fn main() {
    assert_tool::<Bash>();
    let _params = BashParams { command: String::new(), timeout: None };
    let _direct = bash(String::new(), None, ToolContext::detached("id"));
}
