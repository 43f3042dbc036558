use std::sync::Arc;

use pi_runtime::tool::ContextTools;
use pi_runtime::{Ctx, State, tool};

struct Tenant;

/// Reads the tenant.
#[tool]
async fn tenant_name(Ctx(_tenant): Ctx<Arc<Tenant>>) -> String {
    "acme".to_owned()
}

/// Reads no context.
#[tool]
async fn now() -> String {
    "noon".to_owned()
}

/// Holds state, reads the tenant.
#[tool]
async fn counter(State(start): State<u32>, Ctx(_tenant): Ctx<Arc<Tenant>>) -> u32 {
    start
}

fn assert_context_tools<C, T: ContextTools<C>>() {}

fn main() {
    assert_context_tools::<Arc<Tenant>, TenantName>();
    assert_context_tools::<Arc<Tenant>, Arc<TenantName>>();
    assert_context_tools::<Arc<Tenant>, (TenantName, Now, Counter)>();
    // A tool without a `Ctx` runs with any context.
    assert_context_tools::<String, Now>();
    assert_context_tools::<(), (Now, pi_runtime::tools::Read)>();
}
