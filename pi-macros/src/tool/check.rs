//! The rules a `#[tool]` fn must follow, one small fn each, all run on every expansion so
//! one compile reports every independent mistake. Each error points at the offending token
//! and says what to write instead.

use std::collections::{HashMap, HashSet};

use quote::ToTokens;
use syn::{FnArg, Type};

use super::args::{ALIAS, mentions_key};
use super::ast::{Builtin, ParamKind, ToolFn, is_passthrough, unraw};
use crate::ctxt::Ctxt;
use crate::optional::wrapper_inner;

pub(crate) fn check(cx: &Ctxt, tool: &ToolFn<'_>) {
    is_async(cx, tool);
    no_receiver(cx, tool);
    no_generics(cx, tool);
    plain_patterns(cx, tool);
    owned_arguments(cx, tool);
    one_of_each_special(cx, tool);
    extract_not_on_wrappers(cx, tool);
    ctx_owned(cx, tool);
    ctx_not_nested(cx, tool);
    args_alone(cx, tool);
    attrs_on_special_params(cx, tool);
    aliases_unique(cx, tool);
    tool_name_valid(cx, tool);
    type_name_valid(cx, tool);
    has_description(cx, tool);
}

/// The fn is `async`: the agent awaits every tool.
/// `fn bash(command: String)` → `async fn bash(command: String)`.
fn is_async(cx: &Ctxt, tool: &ToolFn<'_>) {
    let sig = &tool.original.sig;
    if sig.asyncness.is_none() {
        cx.error_spanned_by(
            sig.fn_token,
            "`#[tool]` needs an `async fn`: write `async fn`",
        );
    }
}

/// No `self`: a tool is a free fn; shared data comes in through `State<S>`.
/// `async fn read(&self, path: String)` → `async fn read(State(s): State<Arc<S>>, path: String)`.
fn no_receiver(cx: &Ctxt, tool: &ToolFn<'_>) {
    for param in &tool.params {
        if let ParamKind::Receiver = param.kind {
            cx.error_spanned_by(
                param.original,
                "a `#[tool]` fn cannot take `self`: write a free `async fn` and pass shared data with a `State<S>` parameter",
            );
        }
    }
}

/// No generic, lifetime or `impl Trait` parameters: the schema is computed once, from
/// concrete types. `async fn f<T: Display>(x: T)` → `async fn f(x: String)`.
fn no_generics(cx: &Ctxt, tool: &ToolFn<'_>) {
    let generics = &tool.original.sig.generics;
    if !generics.params.is_empty() {
        cx.error_spanned_by(
            &generics.params,
            "a `#[tool]` fn cannot be generic: its JSON Schema is computed from concrete types; replace the type parameters with concrete types",
        );
    } else if let Some(where_clause) = &generics.where_clause {
        cx.error_spanned_by(
            where_clause,
            "a `#[tool]` fn cannot have a `where` clause: use concrete parameter types",
        );
    }
    for param in &tool.params {
        if let FnArg::Typed(pat) = param.original
            && let Type::ImplTrait(impl_trait) = &*pat.ty
        {
            cx.error_spanned_by(
                impl_trait,
                "a `#[tool]` parameter cannot be `impl Trait`: its JSON Schema is computed from a concrete type; write the concrete type",
            );
        }
    }
}

/// A plain argument is bound to a name, which becomes the property name. A destructured
/// value the model does not send is an extractor without its mark.
/// `(a, b): (i64, i64)` → `a: i64, b: i64`;
/// `Tenant(t): Tenant` → `#[tool(extract)] Tenant(t): Tenant`.
fn plain_patterns(cx: &Ctxt, tool: &ToolFn<'_>) {
    for plain in tool.plain() {
        if plain.ident.is_none() {
            cx.error_spanned_by(
                &plain.pat.pat,
                "unsupported parameter pattern: write `name: Type` (the name becomes the argument's name), `Args(value): Args<T>` or `State(state): State<S>`; mark a value taken from the call rather than sent by the model `#[tool(extract)]`",
            );
        }
    }
}

/// Arguments are deserialized into owned values: a borrow has nothing to borrow from (serde
/// would demand `Deserialize<'de>` for every `'de`, and rustc reports lifetimes, not the fix).
/// `text: &str` → `text: String`; `items: Option<&[u8]>` → `items: Option<Vec<u8>>`.
fn owned_arguments(cx: &Ctxt, tool: &ToolFn<'_>) {
    for param in &tool.params {
        let ty = match &param.kind {
            ParamKind::Plain(plain) => plain.ty,
            ParamKind::Args { inner } => inner,
            _ => continue,
        };
        if let Some(reference) = first_reference(ty) {
            let owned = owned_suggestion(&reference.elem);
            let borrowed = reference.to_token_stream().to_string().replace("& ", "&");
            cx.error_spanned_by(
                reference,
                format!(
                    "a tool argument cannot borrow: the model's arguments are deserialized into owned values; write `{owned}` instead of `{borrowed}`"
                ),
            );
        }
    }
}

/// The first `&T` in a type, looking through generic arguments, tuples, arrays and slices.
fn first_reference(ty: &Type) -> Option<&syn::TypeReference> {
    match ty {
        Type::Reference(reference) => Some(reference),
        Type::Paren(inner) => first_reference(&inner.elem),
        Type::Group(inner) => first_reference(&inner.elem),
        Type::Array(array) => first_reference(&array.elem),
        Type::Slice(slice) => first_reference(&slice.elem),
        Type::Tuple(tuple) => tuple.elems.iter().find_map(first_reference),
        Type::Path(path) => path.path.segments.iter().find_map(|segment| {
            let syn::PathArguments::AngleBracketed(args) = &segment.arguments else {
                return None;
            };
            args.args.iter().find_map(|arg| match arg {
                syn::GenericArgument::Type(ty) => first_reference(ty),
                _ => None,
            })
        }),
        _ => None,
    }
}

/// The owned type to write for a borrowed `&T`: `String` for `str`, `Vec<T>` for `[T]`,
/// `PathBuf` for `Path`, else `T` itself.
fn owned_suggestion(borrowed: &Type) -> String {
    let text = borrowed.to_token_stream().to_string().replace(' ', "");
    match borrowed {
        Type::Slice(slice) => {
            let elem = slice.elem.to_token_stream().to_string().replace(' ', "");
            format!("Vec<{elem}>")
        }
        _ if text == "str" => "String".to_owned(),
        _ if text == "Path" || text.ends_with("::Path") => "PathBuf".to_owned(),
        _ => text,
    }
}

/// At most one `ToolContext`, one `State<S>`, one `Ctx<T>` and one `Args<T>`: a second
/// is a mistake (a run supplies one context; the state and the arguments are one value each).
/// Extractors of the user's types may repeat.
fn one_of_each_special(cx: &Ctxt, tool: &ToolFn<'_>) {
    let (mut context, mut state, mut ctx, mut args) = (false, false, false, false);
    for param in &tool.params {
        let (seen, what) = match &param.kind {
            ParamKind::Extract(extract) => match extract.builtin {
                Some(Builtin::Context) => (&mut context, "`ToolContext`"),
                Some(Builtin::Ctx { .. }) => (&mut ctx, "`Ctx<T>`"),
                None => continue,
            },
            ParamKind::State { .. } => (&mut state, "`State<S>`"),
            ParamKind::Args { .. } => (&mut args, "`Args<T>`"),
            _ => continue,
        };
        if *seen {
            cx.error_spanned_by(
                param.original,
                format!("a tool takes at most one {what} parameter: remove this one"),
            );
        }
        *seen = true;
    }
}

/// `#[tool(extract)]` marks a value taken from the call; `Args<T>` (the model's arguments)
/// and `State<S>` (held by the tool value) are not.
/// `#[tool(extract)] State(s): State<S>` → `State(s): State<S>`.
fn extract_not_on_wrappers(cx: &Ctxt, tool: &ToolFn<'_>) {
    for extract in tool.extractors() {
        let Some(key) = &extract.attrs.extract else {
            continue;
        };
        let message = if wrapper_inner(extract.ty, "Args").is_some() {
            "`Args<T>` holds the arguments the model sends, not a value taken from the call: remove `#[tool(extract)]`"
        } else if wrapper_inner(extract.ty, "State").is_some() {
            "`State<S>` is data the tool value holds, not a value taken from the call: remove `#[tool(extract)]`"
        } else {
            continue;
        };
        cx.error_spanned_by(key, message);
    }
}

/// A run's context is cloned into each call, so `Ctx<T>` cannot borrow.
/// `Ctx(t): Ctx<&Tenant>` → `Ctx(t): Ctx<Arc<Tenant>>`.
fn ctx_owned(cx: &Ctxt, tool: &ToolFn<'_>) {
    for inner in tool.ctx() {
        if let Some(reference) = first_reference(inner) {
            let owned = reference
                .elem
                .to_token_stream()
                .to_string()
                .replace(' ', "");
            cx.error_spanned_by(
                reference,
                format!(
                    "a run context cannot borrow: each call gets a clone of the context the run supplies; write `Ctx<Arc<{owned}>>`"
                ),
            );
        }
    }
}

/// `Ctx<T>` is a parameter of its own, not part of an argument: the model never sends it.
/// `tenant: Option<Ctx<Tenant>>` → `Ctx(tenant): Ctx<Tenant>`. Only a type spelled like the
/// built-in (`Ctx` with one type argument): a `struct Ctx { .. }` of the user's is theirs.
fn ctx_not_nested(cx: &Ctxt, tool: &ToolFn<'_>) {
    for param in &tool.params {
        let ty = match &param.kind {
            ParamKind::Plain(plain) => plain.ty,
            ParamKind::Args { inner } | ParamKind::State { inner } => inner,
            ParamKind::Extract(extract) => match extract.builtin {
                Some(Builtin::Ctx { inner }) => inner,
                _ => continue,
            },
            ParamKind::Receiver => continue,
        };
        if let Some(nested) = find_ctx(ty) {
            cx.error_spanned_by(
                nested,
                "`Ctx<T>` is a parameter of its own (the run supplies it; the model never sends it): write `Ctx(value): Ctx<T>` as a parameter of the fn",
            );
        }
    }
}

/// The first type spelled `Ctx<T>` in a type, looking through generic arguments, tuples,
/// references, arrays and slices.
fn find_ctx(ty: &Type) -> Option<&Type> {
    match ty {
        Type::Reference(inner) => find_ctx(&inner.elem),
        Type::Paren(inner) => find_ctx(&inner.elem),
        Type::Group(inner) => find_ctx(&inner.elem),
        Type::Array(array) => find_ctx(&array.elem),
        Type::Slice(slice) => find_ctx(&slice.elem),
        Type::Tuple(tuple) => tuple.elems.iter().find_map(find_ctx),
        Type::Path(path) => {
            if wrapper_inner(ty, "Ctx").is_some() {
                return Some(ty);
            }
            path.path.segments.iter().find_map(|segment| {
                let syn::PathArguments::AngleBracketed(args) = &segment.arguments else {
                    return None;
                };
                args.args.iter().find_map(|arg| match arg {
                    syn::GenericArgument::Type(ty) => find_ctx(ty),
                    _ => None,
                })
            })
        }
        _ => None,
    }
}

/// `Args<T>` holds every argument, so no plain argument may sit next to it.
/// `Args(a): Args<Analysis>, extra: String` → move `extra` into `Analysis`.
fn args_alone(cx: &Ctxt, tool: &ToolFn<'_>) {
    let Some(args) = tool.args() else {
        return;
    };
    let args = args.to_token_stream().to_string().replace(' ', "");
    for plain in tool.plain() {
        cx.error_spanned_by(
            plain.pat,
            format!(
                "`Args<{args}>` already holds all of the tool's arguments: move this parameter into `{args}` as a field, or replace `Args<{args}>` with one parameter per field"
            ),
        );
    }
}

/// `#[tool(alias)]`, `#[serde]` and `#[schemars]` describe a property, so they only go on
/// plain arguments; an extractor takes `#[tool(extract)]` and nothing else.
/// `#[tool(alias = "tenant")] Ctx(t): Ctx<Tenant>` → `Ctx(t): Ctx<Tenant>`.
fn attrs_on_special_params(cx: &Ctxt, tool: &ToolFn<'_>) {
    for param in &tool.params {
        let misplaced: fn(&syn::Attribute) -> bool = match param.kind {
            ParamKind::Plain(_) => continue,
            ParamKind::Extract(_) => |attr| {
                is_passthrough(attr) || (attr.path().is_ident("tool") && mentions_key(attr, ALIAS))
            },
            ParamKind::Args { .. } | ParamKind::State { .. } | ParamKind::Receiver => {
                |attr| attr.path().is_ident("tool") || is_passthrough(attr)
            }
        };
        for attr in param.attrs().iter().filter(|attr| misplaced(attr)) {
            cx.error_spanned_by(
                attr,
                "this attribute describes an argument of the schema, so it only goes on a plain `name: Type` parameter: remove it (put serde/schemars attributes on the fields of `T` in `Args<T>`)",
            );
        }
    }
}

/// An alias is an old name no parameter has now, declared once.
/// `path: String` with `#[tool(alias = "path")]` → `#[tool(alias = "filePath")]`.
fn aliases_unique(cx: &Ctxt, tool: &ToolFn<'_>) {
    let names: HashSet<String> = tool
        .plain()
        .filter_map(|plain| plain.ident)
        .map(unraw)
        .collect();
    let mut aliases: HashMap<String, String> = HashMap::new();
    for plain in tool.plain() {
        let Some(ident) = plain.ident else { continue };
        let owner = unraw(ident);
        for alias in &plain.attrs.aliases {
            let value = alias.value();
            if value.is_empty() {
                cx.error_spanned_by(
                    alias,
                    "an alias cannot be empty: write the old argument name, `alias = \"filePath\"`",
                );
            } else if names.contains(&value) {
                cx.error_spanned_by(
                    alias,
                    format!(
                        "alias `{value}` is already the name of parameter `{value}`: an {ALIAS} is an old name the model may still send; choose a name no parameter has"
                    ),
                );
            } else if let Some(previous) = aliases.insert(value.clone(), owner.clone()) {
                cx.error_spanned_by(
                    alias,
                    format!("alias `{value}` is already declared for parameter `{previous}`: declare each old name once"),
                );
            }
        }
    }
}

/// Tool names match `^[a-zA-Z0-9_-]{1,64}$` (what providers accept).
/// `name = "read file"` → `name = "read_file"`.
fn tool_name_valid(cx: &Ctxt, tool: &ToolFn<'_>) {
    let name = tool.tool_name();
    let valid = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if valid {
        return;
    }
    let message = format!(
        "invalid tool name `{name}`: a tool name has 1 to 64 characters from `a-z`, `A-Z`, `0-9`, `_` and `-` (providers reject others); write e.g. `name = \"{}\"`",
        suggest_name(&name)
    );
    match &tool.attrs.name {
        Some(name) => cx.error_spanned_by(name, message),
        None => cx.error_spanned_by(&tool.original.sig.ident, message),
    }
}

/// `type_name` is a Rust identifier: it names the generated tool type.
/// `type_name = "report tool"` → `type_name = "ReportTool"`.
fn type_name_valid(cx: &Ctxt, tool: &ToolFn<'_>) {
    if let Some(type_name) = &tool.attrs.type_name
        && syn::parse_str::<syn::Ident>(&type_name.value()).is_err()
    {
        cx.error_spanned_by(
            type_name,
            format!(
                "invalid type name `{}`: `type_name` names the generated tool type, so it is a Rust identifier; write e.g. `type_name = \"ReportTool\"`",
                type_name.value()
            ),
        );
    }
}

fn suggest_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if cleaned.is_empty() {
        "my_tool".to_owned()
    } else {
        cleaned
    }
}

/// The model needs a description: the fn's doc comment or `description = "..."`.
/// `description = ""` → `description = "Read a file."`.
fn has_description(cx: &Ctxt, tool: &ToolFn<'_>) {
    if let Some(description) = &tool.attrs.description {
        if description.value().trim().is_empty() {
            cx.error_spanned_by(
                description,
                "an empty description tells the model nothing: write what the tool does, `description = \"Read a file.\"`",
            );
        }
    } else if tool.docs.is_blank() {
        cx.error_spanned_by(
            &tool.original.sig.ident,
            "a tool needs a description for the model: add a `///` doc comment to the fn, or write `#[tool(description = \"...\")]`",
        );
    }
}
