use pi_runtime::tool;

/// Query the database.
#[tool(concurrency = "db:0")]
async fn query(sql: String) -> String {
    sql
}

fn main() {}
