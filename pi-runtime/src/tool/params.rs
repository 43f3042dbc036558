//! The three parameter wrappers a `#[tool]` fn may take besides plain arguments: [`Args`]
//! (every argument as one type), [`State`] (data the tool value carries) and [`Ctx`] (data
//! the run supplies). The macro knows `Args` and `State` by their spelling, since they shape
//! what it generates (the schema, the tool type); `Ctx` is an extractor like any other
//! ([`FromToolContext`](super::FromToolContext)), known by its spelling only as a shorthand
//! for `#[tool(extract)]`.

/// All of a tool's arguments as one type, instead of one fn parameter per argument.
///
/// `T` is any `DeserializeOwned + JsonSchema` type whose schema is an object (a struct or a
/// map); its schema becomes the tool's `parameters`. Derive both traits without depending on
/// serde or schemars with [`#[tool_args]`](crate::tool_args). An `Args<T>` parameter holds
/// all arguments, so it cannot be mixed with plain parameters; `ToolContext` and
/// [`State`] may still sit next to it.
///
/// ```
/// use pi_runtime::{Args, tool, tool_args};
///
/// /// The final analysis of one function.
/// #[tool_args]
/// pub struct FunctionAnalysis {
///     /// The function's name.
///     pub name: String,
///     /// Quotes from the source backing the analysis.
///     pub evidence: Vec<String>,
/// }
///
/// /// Submit the final analysis.
/// #[tool]
/// async fn submit_analysis(Args(analysis): Args<FunctionAnalysis>) -> String {
///     format!("accepted {}", analysis.name)
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Args<T>(pub T);

/// Data the tool value holds and hands to every call: a submit tool's "accepted" flag, a
/// connection pool, a callback.
///
/// The generated tool type stores the `S` and gets a constructor, `MyTool::new(state)`; each
/// call receives a clone (so `S` is usually an `Arc` or a cheap handle). `S` must be
/// `Clone + Send + Sync + 'static`. A tool without a `State` parameter is a unit struct.
///
/// The macro recognises the parameter by its type's spelling, `State<S>` (any path, one type
/// argument), because it declares the tool type's field and constructor from `S`; a trait
/// could not add them. A type of yours named `State` of another shape (`struct State { .. }`)
/// is a plain argument; a generic one, imported under another name, too.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use pi_runtime::{State, tool};
///
/// /// Count the calls.
/// #[tool]
/// async fn count(State(calls): State<Arc<AtomicUsize>>) -> String {
///     (calls.fetch_add(1, Ordering::SeqCst) + 1).to_string()
/// }
///
/// let calls = Arc::new(AtomicUsize::new(0));
/// let tool = Count::new(Arc::clone(&calls));
/// # let _ = tool;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct State<S>(pub S);

/// Data the *run* supplies, where [`State`] is data the tool value holds: the tenant, the
/// user, a database transaction of the request being served.
///
/// Each call receives a clone of the run's context (so `T` is usually an `Arc` or a cheap
/// handle); `T` must be `Clone + Send + Sync + 'static`. The run supplies it with
/// [`Agent::prompt_with`](crate::Agent::prompt_with) or, for every run of one conversation,
/// [`Agent::set_context`](crate::Agent::set_context). A run that supplies no context, or one
/// of another type, does not start: `prompt` fails with an error naming the tool and both
/// types ([`AgentError::MissingContext`](crate::agent::AgentError::MissingContext),
/// [`AgentError::ContextType`](crate::agent::AgentError::ContextType)).
/// [`AgentBuilder::context_type`](crate::agent::AgentBuilder::context_type) moves that check
/// to `build()`, and [`AgentBuilder::context_tools`](crate::agent::AgentBuilder::context_tools)
/// to compile time.
///
/// It is an extractor: [`FromToolContext`](super::FromToolContext) builds it, and a call
/// without the context (an MCP client's, a [`ToolContext`](super::ToolContext) made by hand)
/// fails with a [`ContextRejection`](super::ContextRejection). A parameter whose type is
/// spelled `Ctx<T>` (any path, one type argument) is one without a mark; an alias
/// (`type Tenant = Ctx<Arc<TenantData>>`) is one with `#[tool(extract)]`. Only the spelled
/// form is checked by `context_tools` at compile time (the macro names its `T`); an alias is
/// checked by `build()`, like any extractor's
/// [`context_type`](super::FromToolContext::context_type).
///
/// ```
/// use std::sync::Arc;
/// use pi_runtime::{Ctx, tool};
///
/// struct Tenant {
///     id: u32,
/// }
///
/// /// Which tenant is this?
/// #[tool]
/// async fn whoami(Ctx(tenant): Ctx<Arc<Tenant>>) -> String {
///     format!("tenant {}", tenant.id)
/// }
/// # let _ = Whoami;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Ctx<T>(pub T);
