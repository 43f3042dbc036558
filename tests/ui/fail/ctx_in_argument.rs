use std::sync::Arc;

use pi_runtime::{Ctx, tool};

struct Tenant;

/// The context is not an argument the model sends.
#[tool]
async fn whoami(tenant: Option<Ctx<Arc<Tenant>>>) -> String {
    let _ = tenant;
    String::new()
}

fn main() {}
