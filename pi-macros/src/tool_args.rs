//! `#[tool_args]`: derive `Deserialize` and `JsonSchema` on an argument type through
//! `pi-runtime`'s own serde and schemars, so a crate needs neither as a dependency. The
//! type's own `#[serde(...)]` and `#[schemars(...)]` attributes keep working. `Option<T>`
//! fields follow the same rule as `#[tool]` parameters (see `optional`).

use proc_macro2::TokenStream;
use quote::quote;
use syn::parse::Parser;

use crate::optional;
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
    let item = match syn::parse2::<syn::DeriveInput>(item.clone()) {
        Ok(mut input) => {
            optional_fields(&mut input);
            quote!(#input)
        }
        // Not a struct or enum: the derives below report it.
        Err(_) => item,
    };
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

/// Every named field of type `Option<T>`, in the struct or in an enum's struct variants,
/// becomes an optional property with `T`'s schema.
fn optional_fields(input: &mut syn::DeriveInput) {
    let fields: Vec<&mut syn::Field> = match &mut input.data {
        syn::Data::Struct(data) => data.fields.iter_mut().collect(),
        syn::Data::Enum(data) => data
            .variants
            .iter_mut()
            .flat_map(|variant| variant.fields.iter_mut())
            .collect(),
        syn::Data::Union(_) => Vec::new(),
    };
    for field in fields.into_iter().filter(|field| field.ident.is_some()) {
        let attrs = optional::attrs(&field.ty, &field.attrs);
        field.attrs.extend(attrs);
    }
}
