use std::rc::Rc;

use pi_runtime::tool;

async fn yield_now() {}

/// Holds an `Rc` across an await.
#[tool]
async fn count(text: String) -> String {
    let shared = Rc::new(text);
    yield_now().await;
    shared.to_string()
}

fn main() {}
