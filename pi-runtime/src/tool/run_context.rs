//! The per-run context: a value of the application's (tenant, user, database transaction)
//! that one run hands to every tool call, hook and nested call, so one agent definition
//! serves concurrent requests with different contexts.

use std::any::{Any, TypeId};
use std::fmt;
use std::sync::Arc;

/// A run's context, type-erased: what
/// [`Agent::prompt_with`](crate::Agent::prompt_with) and
/// [`Agent::set_context`](crate::Agent::set_context) supply, what a `Ctx<T>` parameter
/// receives a clone of, and what hooks read
/// ([`BeforeToolCall::context`](crate::agent::BeforeToolCall::context)).
///
/// Its `Debug` shows the type only, never the value: a context may hold secrets, and pi
/// never records it on `tracing` spans (log it yourself in a hook if you want it there).
///
/// ```
/// use pi_runtime::tool::RunContext;
///
/// #[derive(Clone)]
/// struct Tenant(u32);
///
/// let context = RunContext::new(Tenant(7));
/// assert_eq!(context.get::<Tenant>().map(|t| t.0), Some(7));
/// assert!(context.get::<String>().is_none());
/// assert_eq!(format!("{context:?}"), format!("RunContext<{}>", std::any::type_name::<Tenant>()));
/// ```
#[derive(Clone)]
pub struct RunContext {
    value: Arc<dyn Any + Send + Sync>,
    ty: ContextType,
}

impl RunContext {
    /// Wrap `value`.
    pub fn new<T: Send + Sync + 'static>(value: T) -> Self {
        RunContext {
            value: Arc::new(value),
            ty: ContextType::of::<T>(),
        }
    }

    /// The value, if it is a `T`.
    pub fn get<T: 'static>(&self) -> Option<&T> {
        self.value.downcast_ref()
    }

    /// The value's type.
    pub fn context_type(&self) -> ContextType {
        self.ty
    }
}

impl fmt::Debug for RunContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RunContext<{}>", self.ty.name)
    }
}

/// The type of a context: what a tool's `Ctx<T>` (or another extractor) reads
/// ([`ToolSettings::context_type`](super::ToolSettings::context_type),
/// [`FromToolContext::context_type`](super::FromToolContext::context_type)), compared with
/// what a run supplies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ContextType {
    id: TypeId,
    name: &'static str,
}

impl ContextType {
    /// The type `T`.
    pub fn of<T: 'static>() -> Self {
        ContextType {
            id: TypeId::of::<T>(),
            name: std::any::type_name::<T>(),
        }
    }

    /// The type's name, as `std::any::type_name` gives it.
    pub fn name(&self) -> &'static str {
        self.name
    }
}

impl fmt::Display for ContextType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}
