use pi_runtime::tool;

/// Policy keys wrong: the bad values before a value of the wrong kind (`1.5`) are each reported.
#[tool(timeout = "soon", retries = 1.5, concurrency = "my db:4", max_output = "0B", timout = "1s")]
async fn query(sql: String) -> String {
    sql
}

fn main() {}
