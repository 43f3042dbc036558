use pi_runtime::{ToolContext, tool};

/// Two contexts.
#[tool]
async fn add(ctx: ToolContext, a: i64, again: ToolContext) -> String {
    let _ = (ctx, again);
    a.to_string()
}

fn main() {}
