use pi_runtime::{Args, tool, tool_args};

/// The analysis.
#[tool_args]
struct Analysis {
    name: String,
}

/// Mixed.
#[tool]
async fn submit(Args(analysis): Args<Analysis>, extra: String) -> String {
    analysis.name + &extra
}

fn main() {}
