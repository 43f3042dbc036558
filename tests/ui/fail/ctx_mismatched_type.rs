use std::sync::Arc;

use pi_runtime::agent::Agent;
use pi_runtime::provider::faux::FauxModel;
use pi_runtime::{Ctx, tool};

struct Tenant;
struct User;

/// Who is asking.
#[tool]
async fn whoami(Ctx(_user): Ctx<Arc<User>>) -> String {
    "someone".to_owned()
}

/// The time.
#[tool]
async fn now() -> String {
    "noon".to_owned()
}

fn main() {
    let _ = Agent::builder()
        .model(FauxModel::new())
        .context_tools::<Arc<Tenant>>((Now, Whoami));
}
