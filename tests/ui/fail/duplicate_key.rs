use pi_runtime::tool;

/// Two names.
#[tool(name = "add", name = "sum")]
async fn add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

fn main() {}
