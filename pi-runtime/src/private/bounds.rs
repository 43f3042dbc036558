//! Marker traits whose only job is a good error message: the macro asks for them in hidden
//! check fns spanned at the user's tokens, so an unmet bound lands on the offending type and
//! says what to write instead (rustc's own "`X: Deserialize<'de>` is not satisfied" points
//! into generated code and names no fix).

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::tool::{Args, Ctx, IntoToolError, IntoToolResult, State, ToolError, ToolResult};

/// A plain tool parameter's type is deserialized from the model's arguments.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool parameter: it does not implement `serde::Deserialize`",
    label = "not deserializable from the model's JSON arguments",
    note = "derive it: put `#[pi_runtime::tool_args]` on the type (or `#[derive(serde::Deserialize, schemars::JsonSchema)]`)",
    note = "borrowed types such as `&str` cannot be deserialized from the arguments: use an owned type such as `String`"
)]
pub trait DeserializeArgument {}

impl<T: DeserializeOwned> DeserializeArgument for T {}

/// A plain tool parameter's type has a JSON Schema: it becomes a property of `parameters`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool parameter: it does not implement `schemars::JsonSchema`",
    label = "no JSON Schema for the model",
    note = "derive it: put `#[pi_runtime::tool_args]` on the type (or `#[derive(serde::Deserialize, schemars::JsonSchema)]`)"
)]
pub trait DescribeArgument {}

impl<T: JsonSchema + ?Sized> DescribeArgument for T {}

/// The `S` of a `State<S>` parameter: the tool value holds it and clones it into each call.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's state: it must be `Clone + Send + Sync + 'static`",
    label = "each call gets a clone of the state, possibly on another thread",
    note = "wrap the state in an `Arc` (and mutable parts in a `Mutex` or atomics): `State<Arc<MyState>>`"
)]
pub trait ToolState: Clone + Send + Sync + 'static {}

impl<S: Clone + Send + Sync + 'static> ToolState for S {}

/// A parameter spelled `State<S>` is pi's [`State`]: the macro read it by its name, to
/// declare the tool type's field. The value is built through this trait, named at the
/// parameter's type, so a type of the user's with that name is reported there, with the fix,
/// rather than as a mismatch inside the expansion.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not `pi_runtime::State`, and `#[tool]` reads a parameter spelled `State<S>` as the tool's state",
    label = "read as the tool's state by its name",
    note = "to take a type of yours named `State` as an argument, import it under another name: `use crate::State as DoorState;`"
)]
pub trait StateParam<S> {
    /// The parameter's value.
    fn from_state(state: S) -> Self;
}

impl<S> StateParam<S> for State<S> {
    fn from_state(state: S) -> Self {
        State(state)
    }
}

/// A parameter spelled `Args<T>` is pi's [`Args`]: see [`StateParam`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not `pi_runtime::Args`, and `#[tool]` reads a parameter spelled `Args<T>` as all of the tool's arguments",
    label = "read as all of the tool's arguments by its name",
    note = "to take a type of yours named `Args` as an argument, import it under another name: `use crate::Args as MyArgs;`"
)]
pub trait ArgsParam<T> {
    /// The parameter's value.
    fn from_args(args: T) -> Self;
}

impl<T> ArgsParam<T> for Args<T> {
    fn from_args(args: T) -> Self {
        Args(args)
    }
}

/// The `T` of a `Ctx<T>` parameter: each call gets a clone of the run's context.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a run context: it must be `Clone + Send + Sync + 'static`",
    label = "each call gets a clone of the run's context, possibly on another thread",
    note = "wrap the context in an `Arc`: `Ctx<Arc<MyContext>>`"
)]
pub trait RunContextValue: Clone + Send + Sync + 'static {}

impl<T: Clone + Send + Sync + 'static> RunContextValue for T {}

/// What a tool fn's return value becomes: `Ok` (or a plain value) converts through
/// [`IntoToolResult`], `Err` through [`IntoToolError`] (its `Display` text).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a tool",
    label = "this type does not convert into a tool result",
    note = "return `String`, a number, `bool`, `()`, `ToolResult`, `serde_json::Value`, `Json<T>` (for `T: Serialize`) or `Vec<ContentBlock>`, optionally inside `Result<_, E>` with `E: Display`"
)]
pub trait IntoToolOutcome {
    /// The call's outcome.
    ///
    /// # Errors
    /// The fn returned `Err`.
    fn into_outcome(self) -> Result<ToolResult, ToolError>;
}

impl<T: IntoToolResult> IntoToolOutcome for T {
    fn into_outcome(self) -> Result<ToolResult, ToolError> {
        Ok(self.into_tool_result())
    }
}

impl<T: IntoToolResult, E: IntoToolError> IntoToolOutcome for Result<T, E> {
    fn into_outcome(self) -> Result<ToolResult, ToolError> {
        self.map(IntoToolResult::into_tool_result)
            .map_err(IntoToolError::into_tool_error)
    }
}

/// The name of a tool type `#[tool]` generates is free: `Named` (what the name means where
/// the tool is defined) is the tool type itself. A type of the user's with the same name is
/// reported here, with the key that renames the tool type, next to rustc's E0428.
#[diagnostic::on_unimplemented(
    message = "`#[tool]` cannot name its tool type `{Self}`: your code has another item named `{Self}`",
    label = "the tool type is named here",
    note = "name the tool type yourself: `#[tool(type_name = \"{Self}Tool\")]` (its argument struct is then named `{Self}ToolParams`)"
)]
pub trait NamesTheTool<T: ?Sized> {}

impl<T: ?Sized> NamesTheTool<T> for T {}

/// Compares a tool type reached through its value with `N`, the type its name resolves to.
/// A method, so that `Self` is fixed by the value before `N: NamesTheTool<Self>` is checked
/// (a free fn with both as parameters would unify them through the blanket impl instead).
pub trait NameCheck {
    /// Type-checked only, never called.
    fn names_the_tool<N: NamesTheTool<Self>>(&self) {}
}

impl<T> NameCheck for T {}

/// A tool reading `Self` (`Ctx<U>` for a `Ctx<U>` parameter) runs where the run's context is
/// a `T`: the bound of the `ContextTools` impl `#[tool]` generates for such a tool, so a
/// mismatch is reported with both types.
#[diagnostic::on_unimplemented(
    message = "this tool reads `{Self}`, and the agent's runs supply `{T}`",
    label = "registered for runs whose context is `{T}`",
    note = "`context_tools::<T>(..)` takes the tools whose `Ctx<..>` parameter reads that `T`, or that read no context: change the tool's `Ctx<..>` or the type given to `context_tools`"
)]
pub trait RunsWith<T> {}

impl<T> RunsWith<T> for Ctx<T> {}
