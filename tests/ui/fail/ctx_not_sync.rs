use std::rc::Rc;

use pi_runtime::{Ctx, tool};

struct Tenant;

/// A context that cannot cross threads.
#[tool]
async fn whoami(Ctx(_tenant): Ctx<Rc<Tenant>>) -> String {
    String::new()
}

fn main() {}
