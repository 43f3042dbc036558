use pi_runtime::tool;

/// Space in the name.
#[tool(name = "read file")]
async fn read(path: String) -> String {
    path
}

fn main() {}
