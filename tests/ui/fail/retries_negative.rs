use pi_runtime::tool;

/// Query the database.
#[tool(retries = 99999999999)]
async fn query(sql: String) -> String {
    sql
}

fn main() {}
