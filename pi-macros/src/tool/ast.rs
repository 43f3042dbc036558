//! Our model of the user's fn: every parameter classified (plain argument, `Args<T>`,
//! `State<S>`, extractor), each node keeping the user's tokens so later stages can put an
//! error on the exact token.
//!
//! Only what shapes the generated items is read from the types' spelling: `Args<T>` (the
//! schema is `T`'s) and `State<S>` (a field of the tool type and its constructor). An
//! extractor is whatever implements the runtime's `FromToolContext`, which a macro cannot
//! see; so a parameter is one when marked `#[tool(extract)]`, or when its type is spelled
//! like one of the two built-ins (`ToolContext`, `Ctx<T>`), a shorthand for the mark.

use syn::{Attribute, FnArg, Ident, ItemFn, LitBool, Pat, PatType, PathArguments, Type};

use super::args::{ParamAttrs, ToolAttrs};
use crate::ctxt::Ctxt;
use crate::docs::Docs;
use crate::optional::{last_segment, wrapper_inner};

/// The fn under `#[tool]`.
pub(crate) struct ToolFn<'a> {
    pub(crate) original: &'a ItemFn,
    pub(crate) attrs: ToolAttrs,
    pub(crate) docs: Docs,
    pub(crate) params: Vec<Param<'a>>,
}

/// One parameter of the fn.
pub(crate) struct Param<'a> {
    pub(crate) original: &'a FnArg,
    pub(crate) kind: ParamKind<'a>,
}

pub(crate) enum ParamKind<'a> {
    /// `name: Type`: one property of the schema.
    Plain(Plain<'a>),
    /// `Args(x): Args<T>`: `T` holds every argument.
    Args { inner: &'a Type },
    /// `State(x): State<S>`: the tool value holds an `S`.
    State { inner: &'a Type },
    /// Built from the call by `FromToolContext`: `#[tool(extract)] x: T`, `ctx: ToolContext`,
    /// `Ctx(x): Ctx<T>`.
    Extract(Extract<'a>),
    /// `self`, `&self`: rejected by `check`.
    Receiver,
}

/// An extractor parameter.
pub(crate) struct Extract<'a> {
    pub(crate) ty: &'a Type,
    /// The built-in its type is spelled like, if any.
    pub(crate) builtin: Option<Builtin<'a>>,
    /// `#[tool(extract)]`, `#[tool(alias = ...)]`: `extract` is what makes a parameter of
    /// another type an extractor; `alias` is rejected by `check`.
    pub(crate) attrs: ParamAttrs,
}

/// The extractors the macro knows by their spelling.
#[derive(Clone, Copy)]
pub(crate) enum Builtin<'a> {
    /// `ToolContext`, any path.
    Context,
    /// `Ctx<T>`, any path: the run's context, whose `T` is checked at compile time against
    /// the type `AgentBuilder::context_tools` declares.
    Ctx { inner: &'a Type },
}

impl<'a> Builtin<'a> {
    /// The built-in a type is spelled like: `ToolContext` without generic arguments, `Ctx`
    /// with one type argument. A type of the user's named `Ctx` or `ToolContext` of another
    /// shape (`struct Ctx { .. }`) is not one.
    pub(crate) fn of(ty: &'a Type) -> Option<Self> {
        if let Some(inner) = wrapper_inner(ty, "Ctx") {
            Some(Builtin::Ctx { inner })
        } else if is_named(ty, "ToolContext") {
            Some(Builtin::Context)
        } else {
            None
        }
    }
}

/// A plain argument.
pub(crate) struct Plain<'a> {
    pub(crate) pat: &'a PatType,
    /// `None` for a pattern other than `name` / `mut name` (rejected by `check`).
    pub(crate) ident: Option<&'a Ident>,
    pub(crate) ty: &'a Type,
    pub(crate) docs: Docs,
    pub(crate) attrs: ParamAttrs,
    /// `#[serde(...)]` and `#[schemars(...)]`, moved onto the generated field.
    pub(crate) passthrough: Vec<&'a Attribute>,
}

impl<'a> ToolFn<'a> {
    pub(crate) fn from_syn(cx: &Ctxt, original: &'a ItemFn, attrs: ToolAttrs) -> Self {
        let params = original
            .sig
            .inputs
            .iter()
            .map(|input| Param::from_syn(cx, input))
            .collect();
        ToolFn {
            original,
            attrs,
            docs: Docs::from_attrs(&original.attrs),
            params,
        }
    }

    /// The plain arguments, in order.
    pub(crate) fn plain(&self) -> impl Iterator<Item = &Plain<'a>> {
        self.params.iter().filter_map(|param| match &param.kind {
            ParamKind::Plain(plain) => Some(plain),
            _ => None,
        })
    }

    /// `T` of the `Args<T>` parameter, if any.
    pub(crate) fn args(&self) -> Option<&'a Type> {
        self.params.iter().find_map(|param| match param.kind {
            ParamKind::Args { inner } => Some(inner),
            _ => None,
        })
    }

    /// `S` of the `State<S>` parameter, if any.
    pub(crate) fn state(&self) -> Option<&'a Type> {
        self.params.iter().find_map(|param| match param.kind {
            ParamKind::State { inner } => Some(inner),
            _ => None,
        })
    }

    /// The extractor parameters, in order.
    pub(crate) fn extractors(&self) -> impl Iterator<Item = &Extract<'a>> {
        self.params.iter().filter_map(|param| match &param.kind {
            ParamKind::Extract(extract) => Some(extract),
            _ => None,
        })
    }

    /// `T` of the parameters spelled `Ctx<T>`, in order.
    pub(crate) fn ctx(&self) -> impl Iterator<Item = &'a Type> {
        self.extractors()
            .filter_map(|extract| match extract.builtin {
                Some(Builtin::Ctx { inner }) => Some(inner),
                _ => None,
            })
    }

    /// `closed` (the default) or `closed = false`: whether an unknown argument is an error
    /// (`#[serde(deny_unknown_fields)]`, `"additionalProperties": false`).
    pub(crate) fn closed(&self) -> bool {
        self.attrs.closed.as_ref().is_none_or(LitBool::value)
    }

    /// The name the model calls: `name = "..."` or the fn's name.
    pub(crate) fn tool_name(&self) -> String {
        match &self.attrs.name {
            Some(name) => name.value(),
            None => unraw(&self.original.sig.ident),
        }
    }
}

impl<'a> Param<'a> {
    fn from_syn(cx: &Ctxt, original: &'a FnArg) -> Self {
        let FnArg::Typed(pat) = original else {
            return Param {
                original,
                kind: ParamKind::Receiver,
            };
        };
        let attrs = ParamAttrs::parse(cx, &pat.attrs);
        let ty = &*pat.ty;
        // The mark first: it makes any type an extractor, an alias of `Ctx<T>` among them
        // (`check` rejects it on `Args<T>` and `State<S>`).
        let kind = if attrs.extract.is_some() {
            ParamKind::Extract(Extract {
                ty,
                builtin: Builtin::of(ty),
                attrs,
            })
        } else if let Some(inner) = wrapper_inner(ty, "Args") {
            ParamKind::Args { inner }
        } else if let Some(inner) = wrapper_inner(ty, "State") {
            ParamKind::State { inner }
        } else if let Some(builtin) = Builtin::of(ty) {
            ParamKind::Extract(Extract {
                ty,
                builtin: Some(builtin),
                attrs,
            })
        } else {
            let ident = match &*pat.pat {
                Pat::Ident(ident) if ident.by_ref.is_none() && ident.subpat.is_none() => {
                    Some(&ident.ident)
                }
                _ => None,
            };
            ParamKind::Plain(Plain {
                pat,
                ident,
                ty,
                docs: Docs::from_attrs(&pat.attrs),
                attrs,
                passthrough: pat
                    .attrs
                    .iter()
                    .filter(|attr| is_passthrough(attr))
                    .collect(),
            })
        };
        Param { original, kind }
    }

    /// The parameter's own attributes, for errors about attributes on special parameters.
    pub(crate) fn attrs(&self) -> &'a [Attribute] {
        match self.original {
            FnArg::Typed(pat) => &pat.attrs,
            FnArg::Receiver(receiver) => &receiver.attrs,
        }
    }
}

/// Attributes the macro consumes from a parameter (rustc rejects them on fn parameters).
pub(crate) fn is_macro_only(attr: &Attribute) -> bool {
    attr.path().is_ident("doc") || attr.path().is_ident("tool") || is_passthrough(attr)
}

/// serde and schemars attributes go onto the generated field as written.
pub(crate) fn is_passthrough(attr: &Attribute) -> bool {
    attr.path().is_ident("serde") || attr.path().is_ident("schemars")
}

/// `x` without a raw-identifier prefix: the name serde and the model see.
pub(crate) fn unraw(ident: &Ident) -> String {
    let name = ident.to_string();
    name.strip_prefix("r#")
        .map_or(name.clone(), ToOwned::to_owned)
}

/// `name` without generic arguments, any path: `ToolContext`, `pi_runtime::ToolContext`.
fn is_named(ty: &Type, name: &str) -> bool {
    last_segment(ty).is_some_and(|segment| {
        segment.ident == name && matches!(segment.arguments, PathArguments::None)
    })
}
