use pi_runtime::tool;

/// Delete a file.
#[tool(approval = "sometimes")]
async fn delete(path: String) -> String {
    path
}

fn main() {}
