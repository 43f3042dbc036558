//! Each served call's context: what the application makes of the caller's principal
//! ([`McpServer::with_context`](super::McpServer::with_context)), handed to the call's tool
//! and hooks as an agent's run hands its own.

use std::any::Any;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use rmcp::model::ErrorData;

use crate::mcp::McpError;
use crate::mcp::auth::Principal;
use crate::tool::{ContextType, RunContext, ToolRegistry};

/// Makes a call's context from its principal.
type Make = dyn Fn(Option<&Principal>) -> RunContext + Send + Sync;

/// The application's context function, with the type it returns.
#[derive(Clone)]
pub(super) struct CallContext {
    make: Arc<Make>,
    ty: ContextType,
}

impl fmt::Debug for CallContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CallContext<{}>", self.ty)
    }
}

impl CallContext {
    pub(super) fn new<T, F>(make: F) -> Self
    where
        T: Send + Sync + 'static,
        F: Fn(Option<&Principal>) -> T + Send + Sync + 'static,
    {
        CallContext {
            make: Arc::new(move |principal| RunContext::new(make(principal))),
            ty: ContextType::of::<T>(),
        }
    }

    /// Check that every tool reading a context reads this one, as an agent's `build()` does.
    ///
    /// # Errors
    /// [`McpError::ContextType`] for the first tool that reads another type.
    pub(super) fn check(&self, tools: &ToolRegistry) -> Result<(), McpError> {
        for (tool, settings) in tools.registered() {
            if let Some(needs) = settings.context_type
                && needs != self.ty
            {
                return Err(McpError::ContextType {
                    tool: tool.definition().name.clone(),
                    needs: needs.name(),
                    supplied: self.ty.name(),
                });
            }
        }
        Ok(())
    }

    /// The context of a call from `principal`.
    ///
    /// # Errors
    /// The application's function panicked: the call is answered with an internal error,
    /// as the transport goes on serving (a panic would otherwise leave the client waiting).
    pub(super) fn make(&self, principal: Option<&Principal>) -> Result<RunContext, ErrorData> {
        catch_unwind(AssertUnwindSafe(|| (self.make)(principal))).map_err(|panic| {
            tracing::error!(
                panic = panic_text(panic.as_ref()),
                "the MCP server's context function panicked"
            );
            ErrorData::internal_error("The server could not make the call's context", None)
        })
    }
}

/// A panic's message, when it has one.
fn panic_text(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Ctx;

    /// Who calls.
    #[derive(Clone)]
    struct Subject(Option<String>);

    /// Say who calls.
    #[crate::tool]
    async fn whoami(Ctx(subject): Ctx<Subject>) -> String {
        subject.0.unwrap_or_default()
    }

    /// The time.
    #[crate::tool]
    async fn now() -> String {
        "noon".into()
    }

    fn registry() -> ToolRegistry {
        ToolRegistry::new((Whoami, Now)).expect("tools register")
    }

    #[test]
    fn the_context_is_made_from_the_principal() {
        let context =
            CallContext::new(|p: Option<&Principal>| Subject(p.map(|p| p.subject.clone())));
        assert!(context.check(&registry()).is_ok());
        let principal = Principal::new("billing");
        let made = context.make(Some(&principal)).expect("made");
        assert_eq!(
            made.get::<Subject>().and_then(|s| s.0.as_deref()),
            Some("billing")
        );
        let anonymous = context.make(None).expect("made");
        assert_eq!(
            anonymous.get::<Subject>().map(|s| s.0.is_none()),
            Some(true)
        );
    }

    #[test]
    fn a_tool_reading_another_type_is_refused() {
        let context = CallContext::new(|_: Option<&Principal>| 7_u32);
        let error = context.check(&registry()).expect_err("refused");
        assert_eq!(
            error.to_string(),
            format!(
                "tool \"whoami\" reads a context of type `{}`, and the server's calls supply a \
                 `u32`",
                std::any::type_name::<Subject>()
            )
        );
    }

    #[test]
    fn a_panicking_context_function_is_an_internal_error() {
        let context = CallContext::new(|_: Option<&Principal>| -> Subject { panic!("no") });
        let error = context.make(None).expect_err("an error");
        assert_eq!(
            error.message,
            "The server could not make the call's context"
        );
    }
}
