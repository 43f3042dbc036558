//! The shared body of every `#[tool]`, so the macro emits calls instead of code per tool:
//! the definition built once, and `execute` as one generic async fn. A generic fn is
//! type-checked and borrow-checked once for the whole crate; an `async` block written out
//! per tool is a state machine the compiler builds and checks per tool.

use std::sync::OnceLock;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::tool::{ConstrainedSampling, Strictness, Tool, ToolContext, ToolError, ToolResult};
use futures::future::BoxFuture;

/// A `#[tool]`'s definition: built on first use into `cell`, a `static` of the tool type's
/// own, and shared by every later call.
pub fn definition(
    cell: &'static OnceLock<Tool>,
    name: &'static str,
    description: &'static str,
    parameters: fn(bool) -> Value,
    closed: bool,
    strict: Option<Strictness>,
) -> &'static Tool {
    cell.get_or_init(|| {
        let tool = Tool::new(name, description, parameters(closed));
        match strict {
            Some(strict) => {
                tool.with_constrained_sampling(ConstrainedSampling::JsonSchema { strict })
            }
            None => tool,
        }
    })
}

/// A `#[tool]`'s `execute`: deserialize the validated arguments into `A`, hand them with the
/// call's context to `call` (the macro's closure that spreads them over the user's fn, in its
/// parameter order, and takes a `Ctx<T>` out of the context), await what it returns and
/// convert it with `convert` ([`IntoToolOutcome::into_outcome`](super::IntoToolOutcome::into_outcome), named by the macro at the
/// fn's return type so a type that does not convert is reported there).
///
/// Nothing runs before the first poll, as with an `async` block.
pub fn execute<A, F, Fut>(
    tool: &'static str,
    params: Value,
    ctx: ToolContext,
    call: F,
    convert: fn(Fut::Output) -> Result<ToolResult, ToolError>,
) -> BoxFuture<'static, Result<ToolResult, ToolError>>
where
    A: DeserializeOwned,
    F: FnOnce(A, ToolContext) -> Result<Fut, ToolError> + Send + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: 'static,
{
    Box::pin(async move {
        let args: A = crate::args::deserialize_arguments(tool, params)?;
        let output = call(args, ctx)?.await;
        convert(output)
    })
}
