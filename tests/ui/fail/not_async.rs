use pi_runtime::tool;

/// Not async.
#[tool]
fn bash(command: String) -> String {
    command
}

fn main() {}
