//! [`FromToolContext`]: how a `#[tool]` fn's parameters that the model does not send are
//! built from the call, like axum's `FromRequestParts` and rmcp's `FromContextPart`. The
//! macro knows a parameter is one by its mark, `#[tool(extract)]`, or by the spelling of the
//! two built-in ones (`ToolContext`, `Ctx<T>`); what the value is and how it is built is this
//! trait's, so a new extractor needs no change to the macro.

use std::convert::Infallible;
use std::fmt;

use super::{ContextType, Ctx, IntoToolError, RunContext, ToolContext};

/// A value a `#[tool]` fn takes from the call rather than from the model's arguments: an
/// extractor, like axum's `FromRequestParts`.
///
/// Before each call of the fn, every extractor parameter is built, in parameter order, from
/// the call's [`ToolContext`] (call id, cancellation, progress updates, the run's
/// [`RunContext`], the idempotency key) and the tool's name. The first rejection ends the
/// call: it becomes the call's error result through [`IntoToolError`], as an `Err` returned
/// by the fn would (its `Display` text for the model; a [`ToolError`](super::ToolError) keeps
/// its kind). The arguments are validated and deserialized first, so a call with invalid
/// arguments reports those.
///
/// [`ToolContext`] and [`Ctx<T>`] implement it. A parameter is an extractor when it is
/// marked `#[tool(extract)]` or, without the mark, when its type is spelled `ToolContext` or
/// `Ctx<T>`; every other parameter is an argument the model sends. So a type of yours, or an
/// alias of `Ctx<T>`, is taken from the call with the mark:
///
/// ```
/// use std::sync::Arc;
///
/// use pi_runtime::tool::{ContextType, FromToolContext};
/// use pi_runtime::{Ctx, ToolContext, ToolError, tool};
///
/// struct Account {
///     user: String,
///     admin: bool,
/// }
///
/// /// The run's account, if it may call this tool.
/// struct Admin(Arc<Account>);
///
/// impl FromToolContext for Admin {
///     type Rejection = ToolError;
///
///     fn from_tool_context(ctx: &ToolContext, tool: &str) -> Result<Self, ToolError> {
///         match ctx.context::<Arc<Account>>() {
///             Some(account) if account.admin => Ok(Admin(Arc::clone(account))),
///             Some(account) => {
///                 Err(ToolError::new(format!("{} may not call {tool}", account.user)))
///             }
///             None => Err(ToolError::new("this run has no account")),
///         }
///     }
///
///     // The agent checks that its runs supply an `Arc<Account>`.
///     fn context_type() -> Option<ContextType> {
///         Some(ContextType::of::<Arc<Account>>())
///     }
/// }
///
/// /// The same context, through an alias of `Ctx<T>`.
/// type Caller = Ctx<Arc<Account>>;
///
/// /// Drop a table.
/// #[tool]
/// async fn drop_table(
///     /// The table.
///     table: String,
///     #[tool(extract)] Admin(admin): Admin,
///     #[tool(extract)] Ctx(caller): Caller,
/// ) -> String {
///     format!("{} dropped {table} (called by {})", admin.user, caller.user)
/// }
/// # let _ = DropTable;
/// ```
///
/// An extractor is synchronous: it reads what the call already has. Await inside the fn for
/// the rest (a connection from a pool the context holds): an `async` extractor would make
/// every tool's call a state machine of its own, which the compiler builds per tool.
///
/// A parameter marked `#[tool(extract)]` whose type does not implement the trait is a
/// compile error on that type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be taken from the call: it does not implement `FromToolContext`",
    label = "an extractor parameter: built from the call's `ToolContext`",
    note = "implement `pi_runtime::tool::FromToolContext` for `{Self}`; or, if the model sends this value, remove `#[tool(extract)]` to make it a plain argument",
    note = "a parameter whose type is spelled `ToolContext` or `Ctx<T>` is an extractor by that name: import a type of yours with such a name under another one (`use crate::Ctx as MyCtx;`) to make it a plain argument"
)]
pub trait FromToolContext: Sized {
    /// Why the value could not be built; the call's error result (see [`IntoToolError`]).
    type Rejection: IntoToolError;

    /// The value for one call of the tool named `tool`.
    ///
    /// # Errors
    /// The call cannot have the value: the call fails with the rejection.
    fn from_tool_context(ctx: &ToolContext, tool: &str) -> Result<Self, Self::Rejection>;

    /// The type of the run context the value reads, if it reads one. A `#[tool]` reports
    /// the first of its extractors'
    /// ([`ToolSettings::context_type`](super::ToolSettings::context_type)), so the agent
    /// refuses to build, or a run to start, with a context of another type rather than
    /// failing the call. `None` by default.
    fn context_type() -> Option<ContextType> {
        None
    }
}

/// The call's whole context.
impl FromToolContext for ToolContext {
    type Rejection = Infallible;

    fn from_tool_context(ctx: &ToolContext, _tool: &str) -> Result<Self, Infallible> {
        Ok(ctx.clone())
    }
}

/// A clone of the run's context, which must be a `T`.
impl<T: Clone + 'static> FromToolContext for Ctx<T> {
    type Rejection = ContextRejection;

    fn from_tool_context(ctx: &ToolContext, tool: &str) -> Result<Self, ContextRejection> {
        ctx.context::<T>()
            .cloned()
            .map(Ctx)
            .ok_or_else(|| ContextRejection {
                tool: tool.to_owned(),
                needs: ContextType::of::<T>(),
                supplied: ctx.run_context().map(RunContext::context_type),
            })
    }

    fn context_type() -> Option<ContextType> {
        Some(ContextType::of::<T>())
    }
}

/// Why a [`Ctx<T>`] parameter has no value: the call has no run context, or one of another
/// type. An agent's run never gets here (it does not start with a context of the wrong
/// type); a call from elsewhere does: an MCP client's, a [`ToolContext`] made by hand.
///
/// ```
/// use std::sync::Arc;
///
/// use pi_runtime::tool::FromToolContext;
/// use pi_runtime::{Ctx, ToolContext};
///
/// let rejection = Ctx::<Arc<u32>>::from_tool_context(&ToolContext::detached("c1"), "count")
///     .err()
///     .unwrap();
/// assert_eq!(rejection.needs().name(), "alloc::sync::Arc<u32>");
/// assert_eq!(rejection.supplied(), None);
/// assert_eq!(
///     rejection.to_string(),
///     "Tool \"count\" needs a context of type `alloc::sync::Arc<u32>`, and this call has none"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextRejection {
    tool: String,
    needs: ContextType,
    supplied: Option<ContextType>,
}

impl ContextRejection {
    /// The tool whose call was refused.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The context type the parameter reads.
    pub fn needs(&self) -> ContextType {
        self.needs
    }

    /// The type of the context the call has, if it has one.
    pub fn supplied(&self) -> Option<ContextType> {
        self.supplied
    }
}

impl fmt::Display for ContextRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Tool \"{}\" needs a context of type `{}`, and this call has ",
            self.tool, self.needs
        )?;
        match self.supplied {
            Some(supplied) => write!(f, "{supplied}"),
            None => f.write_str("none"),
        }
    }
}

impl std::error::Error for ContextRejection {}
