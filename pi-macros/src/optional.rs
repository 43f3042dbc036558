//! The one `Option` rule, for `#[tool]` parameters and `#[tool_args]` fields alike: an
//! `Option<T>` is an optional property with `T`'s schema, like pi's `Type.Optional(T)`, not
//! schemars' required-or-`null` `T | null`.
//!
//! Why: the coercion passes run before validation. An explicit `null` for an optional
//! property whose schema rejects `null` is dropped (the field becomes `None`), and a single
//! value for an optional array is wrapped into a one-item array (`"wind"` → `["wind"]`). With
//! `T | null` neither happens: a type list (`["array","null"]`) is never wrapped, so the call
//! fails. The model is also told plainly to omit the key rather than to send `null`.

use quote::quote;
use syn::{Attribute, GenericArgument, PathArguments, Type, TypePath, parse_quote};

/// The attributes that make a field of type `ty` follow the rule: none when `ty` is not
/// `Option<T>` (spelled `Option`, any path) or the field chooses its own schema
/// (`#[schemars(with | schema_with)]`, `#[serde(with | deserialize_with | flatten)]`).
///
/// All of it is schemars-only except `#[serde(default)]` (missing → `None` even with a
/// `deserialize_with`), so a `#[tool_args(serialize)]` type serializes as before.
/// `skip_serializing_if` keeps schemars from writing `"default": null`.
pub(crate) fn attrs(ty: &Type, field_attrs: &[Attribute]) -> Vec<Attribute> {
    let Some(inner) = inner(ty) else {
        return Vec::new();
    };
    if has_key(field_attrs, "schemars", &["with", "schema_with"])
        || has_key(
            field_attrs,
            "serde",
            &["with", "deserialize_with", "flatten"],
        )
    {
        return Vec::new();
    }
    let inner = quote!(#inner).to_string();
    let mut attrs = Vec::new();
    if !has_key(field_attrs, "serde", &["default"]) {
        attrs.push(parse_quote!(#[serde(default)]));
    }
    attrs.push(parse_quote!(
        #[schemars(with = #inner, skip_serializing_if = "::core::option::Option::is_none")]
    ));
    attrs
}

/// `T` when `ty` is `Option<T>` (spelled `Option`, any path): the field is optional with
/// `T`'s schema, unless its attributes choose otherwise (see [`attrs`]).
pub(crate) fn inner(ty: &Type) -> Option<&Type> {
    wrapper_inner(ty, "Option")
}

/// `T` in `Name<T>` (any path prefix).
pub(crate) fn wrapper_inner<'t>(ty: &'t Type, name: &str) -> Option<&'t Type> {
    let segment = last_segment(ty)?;
    if segment.ident != name {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &segment.arguments else {
        return None;
    };
    match args.args.iter().collect::<Vec<_>>().as_slice() {
        [GenericArgument::Type(inner)] => Some(inner),
        _ => None,
    }
}

/// The last path segment of a type, if it is a plain path.
pub(crate) fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(TypePath { qself: None, path }) => path.segments.last(),
        Type::Group(group) => last_segment(&group.elem),
        _ => None,
    }
}

/// Some `#[attr(...)]` among `attrs` has one of `keys` (`key` or `key = ...`). Unparseable
/// serde/schemars attributes are theirs to report; here they only mean "no".
fn has_key(attrs: &[Attribute], attr: &str, keys: &[&str]) -> bool {
    attrs
        .iter()
        .filter(|candidate| candidate.path().is_ident(attr))
        .any(|candidate| {
            let mut found = false;
            let _ = candidate.parse_nested_meta(|meta| {
                found |= keys.iter().any(|key| meta.path.is_ident(key));
                if meta.input.peek(syn::Token![=]) {
                    meta.value()?.parse::<syn::Expr>()?;
                } else if meta.input.peek(syn::token::Paren) {
                    let _content;
                    syn::parenthesized!(_content in meta.input);
                }
                Ok(())
            });
            found
        })
}
