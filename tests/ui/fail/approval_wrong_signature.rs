use pi_runtime::tool;

/// Delete a file.
#[tool(approval = outside_tmp)]
async fn delete(path: String) -> String {
    path
}

/// Takes the path, not the tool's arguments, and answers a bool.
fn outside_tmp(path: &str) -> bool {
    !path.starts_with("/tmp/")
}

fn main() {}
