//! `#[tool_args]`: derive `Deserialize` and `JsonSchema` on an argument type through
//! `pi-runtime`'s own serde and schemars, so a crate needs neither as a dependency. The
//! type's own `#[serde(...)]` and `#[schemars(...)]` attributes keep working.

use proc_macro2::TokenStream;
use quote::quote;
use syn::parse::Parser;

use crate::paths::Paths;

const SERIALIZE: &str = "serialize";
const CRATE: &str = "crate";

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut serialize = false;
    let mut krate = None;
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident(SERIALIZE) {
            serialize = true;
            Ok(())
        } else if meta.path.is_ident(CRATE) {
            let lit: syn::LitStr = meta.value()?.parse()?;
            krate = Some(lit.parse::<syn::Path>()?);
            Ok(())
        } else {
            Err(meta.error(
                "unknown `#[tool_args]` key: write `#[tool_args]`, `#[tool_args(serialize)]` (also derive `Serialize`, for `Json<T>` outputs) or `#[tool_args(crate = \"...\")]`",
            ))
        }
    });
    if let Err(error) = parser.parse2(attr) {
        let error = error.to_compile_error();
        return quote!(#error #item);
    }
    let paths = Paths::new(krate);
    let private = paths.private();
    let serde_crate = paths.serde();
    let schemars_crate = paths.schemars();
    let serialize = serialize.then(|| quote!(#private::serde::Serialize,));
    quote! {
        #[derive(#serialize #private::serde::Deserialize, #private::schemars::JsonSchema)]
        #[serde(crate = #serde_crate)]
        #[schemars(crate = #schemars_crate)]
        #item
    }
}
