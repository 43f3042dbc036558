use pi_runtime::{ToolContext, ToolDefinition, tool};

/// Context first.
#[tool]
async fn first(ctx: ToolContext, a: i64) -> String {
    format!("{} {a}", ctx.call_id())
}

/// Context in the middle, with a full path.
#[tool]
async fn middle(a: i64, ctx: pi_runtime::ToolContext, b: i64) -> String {
    format!("{} {}", ctx.call_id(), a + b)
}

/// No context, no arguments.
#[tool]
async fn nothing() {}

fn assert_tool<T: ToolDefinition>() {}

fn main() {
    assert_tool::<First>();
    assert_tool::<Middle>();
    assert_tool::<Nothing>();
}
