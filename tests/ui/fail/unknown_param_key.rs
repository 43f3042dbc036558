use pi_runtime::tool;

/// Unknown parameter key.
#[tool]
async fn read(
    /// The path.
    #[tool(rename = "filePath")]
    path: String,
) -> String {
    path
}

fn main() {}
