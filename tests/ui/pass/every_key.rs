use std::borrow::Cow;

use pi_runtime::__private::Value;
use pi_runtime::{ToolDefinition, ToolError, tool};

fn shim(raw: &Value) -> Result<Cow<'_, Value>, ToolError> {
    Ok(Cow::Borrowed(raw))
}

/// Ignored: `description` wins.
#[tool(
    name = "read-file",
    label = "Read",
    description = "Read a file.",
    snippet = "Read file contents",
    guidelines = ["Read before you edit."],
    mode = "parallel",
    strict = "require",
    prepare = shim,
    closed = false,
    crate = "::pi_runtime"
)]
async fn read(
    /// The path.
    #[tool(alias = "filePath")]
    path: String,
) -> String {
    path
}

fn assert_tool<T: ToolDefinition>() {}

fn main() {
    assert_tool::<Read>();
}
