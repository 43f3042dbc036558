use pi_runtime::tool;

/// Query the database.
#[tool(retries = "three")]
async fn query(sql: String) -> String {
    sql
}

fn main() {}
