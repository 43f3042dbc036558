use pi_runtime::{Ctx, tool};

struct Tenant;

/// A borrowed context.
#[tool]
async fn whoami(Ctx(_tenant): Ctx<&'static Tenant>) -> String {
    String::new()
}

fn main() {}
