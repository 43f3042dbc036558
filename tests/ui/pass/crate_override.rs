//! A crate that reaches pi-runtime through a re-export under another name.

mod deps {
    pub use pi_runtime as runtime;
}

use deps::runtime::{ToolDefinition, Args, tool, tool_args};

/// An argument type derived through the re-export.
#[tool_args(crate = "crate::deps::runtime")]
struct Query {
    text: String,
}

/// Search.
#[tool(crate = "crate::deps::runtime")]
async fn search(
    /// What to look for.
    text: String,
) -> String {
    text
}

/// Search with a struct.
#[tool(crate = "crate::deps::runtime")]
async fn search_struct(Args(query): Args<Query>) -> String {
    query.text
}

fn assert_tool<T: ToolDefinition>() {}

fn main() {
    assert_tool::<Search>();
    assert_tool::<SearchStruct>();
}
