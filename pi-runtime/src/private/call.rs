//! The shared body of every `#[tool]`, so the macro emits calls instead of code per tool:
//! the declaration (definition and settings) built once, and `execute` as one generic async
//! fn. A generic fn is
//! type-checked and borrow-checked once for the whole crate; an `async` block written out
//! per tool is a state machine the compiler builds and checks per tool.

use std::sync::OnceLock;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::tool::{
    ConstrainedSampling, ContextType, FromToolContext, IntoToolError, Strictness, Tool,
    ToolContext, ToolError, ToolResult, ToolSettings,
};
use futures::future::BoxFuture;

/// What a `#[tool]` declares: its definition (`AgentTool::definition`) and its settings
/// (`ToolDefinition::settings`), built together.
#[derive(Debug)]
pub struct Declaration {
    /// Name, description, parameter schema, constrained sampling.
    pub definition: Tool,
    /// What the attribute and the extractor parameters say.
    pub settings: ToolSettings,
}

/// A `#[tool]`'s declaration: built on first use into `cell`, a `static` of the tool type's
/// own, and shared by every later call.
pub fn declaration(
    cell: &'static OnceLock<Declaration>,
    name: &'static str,
    description: &'static str,
    parameters: fn(bool) -> Value,
    closed: bool,
    strict: Option<Strictness>,
    settings: fn() -> ToolSettings,
) -> &'static Declaration {
    cell.get_or_init(|| {
        let tool = Tool::new(name, description, parameters(closed));
        let definition = match strict {
            Some(strict) => {
                tool.with_constrained_sampling(ConstrainedSampling::JsonSchema { strict })
            }
            None => tool,
        };
        Declaration {
            definition,
            settings: settings(),
        }
    })
}

/// A `#[tool]`'s `execute`: deserialize the validated arguments into `A`, hand them with the
/// call's context to `call` (the macro's closure that builds the extractor parameters with
/// [`extract`] and spreads everything over the user's fn, in its parameter order), await
/// what it returns and convert it with `convert` ([`IntoToolOutcome::into_outcome`](super::IntoToolOutcome::into_outcome), named by the macro at the
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

/// An extractor parameter's value for one call of `tool`; its rejection becomes the call's
/// error. The macro names this fn at the parameter's type, so a type that does not implement
/// [`FromToolContext`] is reported there, with the trait's message.
///
/// # Errors
/// The extractor rejected the call.
pub fn extract<E: FromToolContext>(ctx: &ToolContext, tool: &str) -> Result<E, ToolError> {
    E::from_tool_context(ctx, tool).map_err(IntoToolError::into_tool_error)
}

/// Finds an extractor's context type by autoref specialization: the macro calls
/// `(&&ExtractorProbe::<E>::new()).context_type()`, which resolves to [`ContextTypeOf`] for
/// `E: FromToolContext` and to [`ContextTypeNone`] otherwise. The fallback keeps an `E` that
/// is no extractor from being reported twice: [`extract`] reports it, at the parameter.
pub struct ExtractorProbe<E>(std::marker::PhantomData<E>);

impl<E> ExtractorProbe<E> {
    /// The probe.
    #[must_use]
    pub const fn new() -> Self {
        ExtractorProbe(std::marker::PhantomData)
    }
}

impl<E> std::fmt::Debug for ExtractorProbe<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExtractorProbe")
    }
}

impl<E> Default for ExtractorProbe<E> {
    fn default() -> Self {
        Self::new()
    }
}

/// An extractor's context type: [`FromToolContext::context_type`].
pub trait ContextTypeOf {
    /// The type, or `None`.
    fn context_type(&self) -> Option<ContextType>;
}

impl<E: FromToolContext> ContextTypeOf for &ExtractorProbe<E> {
    fn context_type(&self) -> Option<ContextType> {
        E::context_type()
    }
}

/// A type that is no extractor (already a compile error) reads no context.
pub trait ContextTypeNone {
    /// `None`.
    fn context_type(&self) -> Option<ContextType>;
}

impl<E> ContextTypeNone for ExtractorProbe<E> {
    fn context_type(&self) -> Option<ContextType> {
        None
    }
}
