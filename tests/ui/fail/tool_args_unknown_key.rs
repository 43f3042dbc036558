use pi_runtime::tool_args;

#[tool_args(serialise)]
struct Report {
    lines: Vec<String>,
}

fn main() {}
