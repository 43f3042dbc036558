use std::sync::Arc;

use pi_runtime::tool::{ContextTools, FromToolContext};
use pi_runtime::{Ctx, ToolContext, ToolDefinition, ToolError, tool, tool_args};

struct Tenant;

/// An extractor of the user's: the call's id.
struct CallId(String);

impl FromToolContext for CallId {
    type Rejection = ToolError;

    fn from_tool_context(ctx: &ToolContext, _tool: &str) -> Result<Self, ToolError> {
        Ok(CallId(ctx.call_id().to_owned()))
    }
}

/// An alias of `Ctx<T>`: taken from the call once marked.
type TenantCtx = Ctx<Arc<Tenant>>;

/// A type of the user's named like a built-in, without its shape: a plain argument.
#[tool_args]
struct State {
    open: bool,
}

/// Every kind of extractor, in any position, next to plain arguments.
#[tool]
async fn everything(
    #[tool(extract)] CallId(id): CallId,
    state: State,
    #[tool(extract)] Ctx(_tenant): TenantCtx,
    ctx: ToolContext,
) -> String {
    format!("{id} {} {}", state.open, ctx.call_id())
}

/// Only the user's extractor: no context is read, so any run context fits.
#[tool(type_name = "CallIdTool")]
async fn call_id(#[tool(extract)] CallId(id): CallId) -> String {
    id
}

fn assert_tool<T: ToolDefinition>() {}
fn assert_context_tools<C, T: ContextTools<C>>() {}

fn main() {
    assert_tool::<Everything>();
    assert_context_tools::<String, CallIdTool>();
}
