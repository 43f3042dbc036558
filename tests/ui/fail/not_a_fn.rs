use pi_runtime::tool;

/// A struct.
#[tool]
struct Bash;

fn main() {}
