use pi_runtime::tool;

/// Returns a number.
#[tool]
async fn count(text: String) -> usize {
    text.len()
}

fn main() {}
