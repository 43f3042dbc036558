use pi_runtime::tool;

/// Destructures a tuple.
#[tool]
async fn add((a, b): (i64, i64)) -> String {
    (a + b).to_string()
}

fn main() {}
