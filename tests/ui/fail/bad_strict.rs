use pi_runtime::tool;

/// Bad strictness.
#[tool(strict = "always")]
async fn add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

fn main() {}
