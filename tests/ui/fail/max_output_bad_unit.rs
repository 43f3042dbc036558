use pi_runtime::tool;

/// Dump the log.
#[tool(max_output = "64 kilobytes")]
async fn dump() -> String {
    String::new()
}

fn main() {}
