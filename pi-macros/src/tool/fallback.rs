//! What a failed expansion emits besides its errors: the user's fn (cleaned, so rustc does not
//! add its own errors about parameter attributes) and a stand-in tool type with the same
//! name, constructor and trait impls, so code using the tool produces no follow-up errors.
//! The stand-in never runs: the crate does not compile while the errors stand.

use proc_macro2::TokenStream;
use quote::quote;

use super::ast::{ParamKind, ToolFn};
use super::expand::cleaned_fn;
use super::names::type_ident;
use crate::paths::Paths;

pub(crate) fn tool(tool: &ToolFn<'_>, paths: &Paths, errors: &syn::Error) -> TokenStream {
    let private = paths.private();
    let errors = errors.to_compile_error();
    let func = cleaned_fn(tool.original);
    // A fn with `self` sits in an `impl` block, where a struct cannot be declared.
    if tool
        .params
        .iter()
        .any(|param| matches!(param.kind, ParamKind::Receiver))
    {
        return quote!(#errors #func);
    }
    let vis = &tool.original.vis;
    let ty = type_ident(tool);
    quote! {
        #errors
        #func

        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #ty;

        impl #ty {
            #[allow(dead_code, reason = "stand-in while #[tool] reports errors")]
            #vis fn new<__S>(_state: __S) -> Self {
                #ty
            }
        }

        impl #private::AgentTool for #ty {
            fn definition(&self) -> &#private::Tool {
                ::core::unreachable!()
            }
            fn execute(
                &self,
                _call_id: ::std::string::String,
                _params: #private::Value,
                _ctx: #private::ToolContext,
            ) -> #private::BoxFuture<'_, ::core::result::Result<#private::ToolResult, #private::ToolError>> {
                ::core::unreachable!()
            }
        }

        impl #private::ToolDefinition for #ty {}

        // Any context: `context_tools` calls with the stand-in report nothing more.
        impl<__T> #private::ContextTools<__T> for #ty {}
    }
}
