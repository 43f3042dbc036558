use pi_runtime::tool;

/// Borrows.
#[tool]
async fn echo(text: &'static str) -> String {
    text.to_owned()
}

fn main() {}
