use pi_runtime::tool;

/// Query the database.
#[tool(timeout = "0ms")]
async fn query(sql: String) -> String {
    sql
}

fn main() {}
