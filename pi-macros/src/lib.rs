//! The `#[tool]` and `#[tool_args]` attributes. Depend on `pi-runtime`, which re-exports both
//! and documents them; this crate is a switchboard: each attribute parses, calls one
//! `expand`, and turns errors into `compile_error!` next to the user's item.

use proc_macro::TokenStream;

mod ctxt;
mod docs;
mod optional;
mod paths;
mod tool;
mod tool_args;

/// Turn an `async fn` into a tool. See the `pi-runtime` crate docs for the manual.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(attr.into(), item.into()).into()
}

/// Derive `Deserialize` and `JsonSchema` on an argument type through `pi-runtime`'s own
/// serde and schemars. See the `pi-runtime` crate docs.
#[proc_macro_attribute]
pub fn tool_args(attr: TokenStream, item: TokenStream) -> TokenStream {
    tool_args::expand(attr.into(), item.into()).into()
}
