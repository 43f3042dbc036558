use std::sync::Arc;

use pi_runtime::{Ctx, tool};

struct Tenant;
struct User;

/// Two contexts: a run supplies one.
#[tool]
async fn whoami(Ctx(_tenant): Ctx<Arc<Tenant>>, Ctx(_user): Ctx<Arc<User>>) -> String {
    String::new()
}

fn main() {}
