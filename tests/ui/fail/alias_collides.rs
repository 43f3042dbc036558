use pi_runtime::tool;

/// Alias equals another parameter.
#[tool]
async fn copy(
    /// Source.
    #[tool(alias = "to")]
    from: String,
    /// Destination.
    to: String,
) -> String {
    from + &to
}

fn main() {}
