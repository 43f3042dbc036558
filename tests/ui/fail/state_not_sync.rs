use std::cell::Cell;
use std::sync::Arc;

use pi_runtime::{State, tool};

/// State that is not Sync.
#[tool]
async fn count(State(calls): State<Arc<Cell<u32>>>) -> String {
    calls.get().to_string()
}

fn main() {}
