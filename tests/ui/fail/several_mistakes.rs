use pi_runtime::tool;

// Independent mistakes are all reported by one compile.
#[tool(mode = "fast", colour = "red", name = "bad name")]
fn add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

fn main() {}
