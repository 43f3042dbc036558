use pi_runtime::tool;

struct Tenant;

/// Marked as taken from the call, but `Tenant` does not implement `FromToolContext`.
#[tool]
async fn whoami(#[tool(extract)] tenant: Tenant) -> String {
    let _ = tenant;
    String::new()
}

fn main() {}
