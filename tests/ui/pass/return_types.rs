use pi_runtime::{ContentBlock, Json, ToolDefinition, ToolResult, tool, tool_args};

/// Nothing.
#[tool]
async fn unit() {}

/// A string.
#[tool]
async fn owned_string() -> String {
    String::new()
}

/// A static string.
#[tool]
async fn static_str() -> &'static str {
    "ok"
}

/// A result.
#[tool]
async fn text_result() -> ToolResult {
    ToolResult::text("ok")
}

/// Blocks.
#[tool]
async fn blocks() -> Vec<ContentBlock> {
    Vec::new()
}

/// An output.
#[tool_args(serialize)]
struct Output {
    count: usize,
}

/// JSON.
#[tool]
async fn json_output() -> Json<Output> {
    Json(Output { count: 1 })
}

/// Any `Display` error.
#[tool]
async fn fallible() -> Result<(), std::io::Error> {
    Ok(())
}

/// A `Result` alias.
#[tool]
async fn aliased() -> std::fmt::Result {
    Ok(())
}

fn assert_tool<T: ToolDefinition>() {}

fn main() {
    assert_tool::<Unit>();
    assert_tool::<OwnedString>();
    assert_tool::<StaticStr>();
    assert_tool::<TextResult>();
    assert_tool::<Blocks>();
    assert_tool::<JsonOutput>();
    assert_tool::<Fallible>();
    assert_tool::<Aliased>();
}
