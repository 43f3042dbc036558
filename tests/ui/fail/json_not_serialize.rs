use pi_runtime::{Json, tool, tool_args};

/// What the tool returns.
#[tool_args]
pub struct Summary {
    /// How many words.
    pub words: usize,
}

/// Count the words of a text.
#[tool]
async fn count(text: String) -> Json<Summary> {
    Json(Summary {
        words: text.split_whitespace().count(),
    })
}

fn main() {}
