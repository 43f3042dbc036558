use std::sync::Arc;

use pi_runtime::{Ctx, tool};

struct Tenant;

/// A context is not part of the schema.
#[tool]
async fn whoami(#[tool(alias = "tenant")] Ctx(_tenant): Ctx<Arc<Tenant>>) -> String {
    String::new()
}

fn main() {}
