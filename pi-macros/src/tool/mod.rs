//! `#[tool]`: parse the attribute and the fn into our AST, check the rules, generate the
//! parameter struct and the tool type; on error, emit the fn and stand-in items next to the
//! errors so the rest of the crate still type-checks (no cascade of follow-up errors).

mod args;
mod ast;
mod check;
mod expand;
mod fallback;
mod names;
mod params;
mod policy;

use proc_macro2::TokenStream;
use quote::quote;

use crate::ctxt::Ctxt;
use crate::paths::Paths;

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(func) => func,
        Err(_) => {
            let error = syn::Error::new_spanned(
                &item,
                "`#[tool]` goes on an `async fn`: write `#[tool] async fn name(...) -> ... { ... }`",
            )
            .to_compile_error();
            return quote!(#error #item);
        }
    };
    let cx = Ctxt::new();
    let attrs = args::ToolAttrs::parse(&cx, attr);
    let tool = ast::ToolFn::from_syn(&cx, &func, attrs);
    check::check(&cx, &tool);
    let paths = Paths::new(tool.attrs.krate.clone());
    match cx.check() {
        Ok(()) => expand::tool(&tool, &paths),
        Err(errors) => fallback::tool(&tool, &paths, &errors),
    }
}
