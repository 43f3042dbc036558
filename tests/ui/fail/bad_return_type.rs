use pi_runtime::tool;

/// Splits a text into words.
#[tool]
async fn words(text: String) -> Vec<String> {
    text.split_whitespace().map(str::to_owned).collect()
}

fn main() {}
