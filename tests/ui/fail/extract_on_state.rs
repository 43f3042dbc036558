use pi_runtime::{State, tool};

/// The tool's state is held by the tool value, not taken from the call.
#[tool]
async fn count(#[tool(extract)] State(start): State<u32>) -> u32 {
    start
}

fn main() {}
