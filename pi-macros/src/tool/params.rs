//! The parameter struct of the plain-argument form (`ReadFileParams`): one field per
//! argument, with its `Deserialize` and `JsonSchema` impls calling the runtime's shared code,
//! or serde's and schemars' derives when a parameter carries attributes for them.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

use super::ast::{Plain, ToolFn, unraw};
use super::names::params_ident;
use crate::optional;
use crate::paths::Paths;

/// The parameter struct of the plain-argument form: one field per argument, in order, with
/// the argument's doc comment as its description. Its `Deserialize` and `JsonSchema` impls
/// call shared code of the runtime (`__private::params`); a parameter with `#[serde]` or
/// `#[schemars]` attributes of the user's needs the derives, which read them.
pub(super) fn params_struct(tool: &ToolFn<'_>, paths: &Paths) -> TokenStream {
    if tool.args().is_some() {
        return TokenStream::new();
    }
    if tool.plain().any(|plain| !plain.passthrough.is_empty()) {
        return derived_params_struct(tool, paths);
    }
    let private = paths.private();
    let vis = &tool.original.vis;
    let ident = params_ident(tool);
    let doc = params_doc(tool);
    let fields = tool.plain().map(|plain| {
        let docs = field_docs(plain);
        let (Some(field), ty) = (plain.ident, plain.ty) else {
            return TokenStream::new();
        };
        quote!(#docs #vis #field: #ty,)
    });
    let deserialize = params_deserialize(tool, &ident, &private);
    let json_schema = params_json_schema(tool, &ident, &private);
    quote! {
        #[doc = #doc]
        #[allow(missing_debug_implementations, reason = "argument types need not be Debug")]
        #vis struct #ident {
            #(#fields)*
        }
        #deserialize
        #json_schema
    }
}

fn params_doc(tool: &ToolFn<'_>) -> String {
    format!(
        "The arguments of the [`{}`] tool, as the model sends them.",
        tool.original.sig.ident
    )
}

/// The parameter's `///` lines for rustdoc, or a stand-in for an undocumented one (for
/// `missing_docs`).
fn field_docs(plain: &Plain<'_>) -> TokenStream {
    let docs = plain
        .pat
        .attrs
        .iter()
        .filter(|attr| attr.path().is_ident("doc"));
    match plain.ident {
        Some(ident) if plain.docs.is_blank() => {
            let doc = format!("The `{}` argument.", unraw(ident));
            quote!(#(#docs)* #[doc = #doc])
        }
        _ => quote!(#(#docs)*),
    }
}

/// The plain parameters with their names (all of them: `check` rejects a pattern without one).
fn named<'t, 'a>(tool: &'t ToolFn<'a>) -> impl Iterator<Item = (&'a Ident, &'t Plain<'a>)> {
    tool.plain().filter_map(|plain| Some((plain.ident?, plain)))
}

/// `Deserialize`: the fields as nested pairs from `__private::deserialize_params`, moved into
/// the struct. Locals are `__field0`, ... so no parameter name can be read as a constant
/// pattern.
fn params_deserialize(tool: &ToolFn<'_>, ident: &Ident, private: &TokenStream) -> TokenStream {
    let fields: Vec<(&Ident, &Plain<'_>)> = named(tool).collect();
    let locals: Vec<Ident> = (0..fields.len())
        .map(|index| format_ident!("__field{}", index))
        .collect();
    let pattern = locals
        .iter()
        .rev()
        .fold(quote!(()), |rest, local| quote!((#local, #rest)));
    let names = fields.iter().map(|(field, _)| unraw(field));
    let defaults = fields
        .iter()
        .map(|(_, plain)| optional::inner(plain.ty).is_some());
    let inits = fields.iter().map(|(field, _)| field);
    let name = ident.to_string();
    let closed = tool.closed();
    quote! {
        #[automatically_derived]
        impl<'de> #private::serde::Deserialize<'de> for #ident {
            fn deserialize<__D: #private::serde::Deserializer<'de>>(
                __deserializer: __D,
            ) -> ::core::result::Result<Self, __D::Error> {
                let #pattern = #private::deserialize_params(
                    __deserializer,
                    &#private::Shape {
                        name: #name,
                        fields: &[#(#names),*],
                        defaults: &[#(#defaults),*],
                        closed: #closed,
                    },
                )?;
                ::core::result::Result::Ok(#ident { #(#inits: #locals),* })
            }
        }
    }
}

/// `JsonSchema`: `__private::params_schema` over one `SchemaField` per parameter. An
/// `Option<T>` is described by `T`'s schema (the `Option` rule).
fn params_json_schema(tool: &ToolFn<'_>, ident: &Ident, private: &TokenStream) -> TokenStream {
    let fields = named(tool).map(|(field, plain)| {
        let name = unraw(field);
        let description = description(plain, private);
        let (default, schema_ty) = match optional::inner(plain.ty) {
            Some(inner) => (true, inner),
            None => (false, plain.ty),
        };
        quote! {
            #private::SchemaField {
                name: #name,
                description: #description,
                default: #default,
                schema: #private::field_schema::<#schema_ty>,
            }
        }
    });
    let name = ident.to_string();
    let closed = tool.closed();
    quote! {
        #[automatically_derived]
        impl #private::schemars::JsonSchema for #ident {
            fn schema_name() -> #private::Cow<'static, str> {
                #private::Cow::Borrowed(#name)
            }
            fn schema_id() -> #private::Cow<'static, str> {
                #private::Cow::Borrowed(::core::concat!(::core::module_path!(), "::", #name))
            }
            fn json_schema(
                generator: &mut #private::schemars::SchemaGenerator,
            ) -> #private::schemars::Schema {
                #private::params_schema(generator, #closed, &[#(#fields),*])
            }
        }
    }
}

/// The parameter struct with serde's and schemars' derives, which read the parameters'
/// `#[serde]` and `#[schemars]` attributes.
fn derived_params_struct(tool: &ToolFn<'_>, paths: &Paths) -> TokenStream {
    let private = paths.private();
    let vis = &tool.original.vis;
    let ident = params_ident(tool);
    let serde_crate = paths.serde();
    let schemars_crate = paths.schemars();
    let fields = tool.plain().map(|plain| field(plain, vis, paths));
    let closed = tool.closed().then(|| quote!(#[serde(deny_unknown_fields)]));
    let doc = params_doc(tool);
    quote! {
        #[doc = #doc]
        #[derive(#private::serde::Deserialize, #private::schemars::JsonSchema)]
        #[serde(crate = #serde_crate)]
        // The tool's schema has no root title or description (`parameters_schema` drops
        // them): saying so spares schemars deriving both from the doc at compile time.
        #[schemars(crate = #schemars_crate, title = "", description = "")]
        #closed
        #[allow(missing_debug_implementations, reason = "argument types need not be Debug")]
        #vis struct #ident {
            #(#fields)*
        }
    }
}

fn field(plain: &Plain<'_>, vis: &syn::Visibility, paths: &Paths) -> TokenStream {
    let private = paths.private();
    let Some(ident) = plain.ident else {
        return TokenStream::new();
    };
    let ty = plain.ty;
    let docs = field_docs(plain);
    let passthrough = &plain.passthrough;
    // The description follows our doc rule, not schemars' (which turns a `# heading` into a
    // title): set both explicitly. Undocumented: no description for the model (schemars
    // skips empty metadata).
    let description = description(plain, &private);
    let optional = crate::optional::attrs(ty, &plain.pat.attrs);
    quote! {
        #docs
        #(#optional)*
        #[schemars(title = "", description = #description)]
        #(#passthrough)*
        #vis #ident: #ty,
    }
}

/// A parameter's description for the model: its doc comment, or `""` (no description).
fn description(plain: &Plain<'_>, private: &TokenStream) -> TokenStream {
    if plain.docs.is_blank() {
        quote!("")
    } else {
        plain.docs.to_expr(private)
    }
}
