use pi_runtime::tool;

/// Query the database.
#[tool(timeout = "30 seconds")]
async fn query(sql: String) -> String {
    sql
}

fn main() {}
