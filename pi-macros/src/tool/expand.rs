//! Code generation for a checked `#[tool]` fn: the cleaned fn, hidden bound checks spanned
//! at the user's tokens, the parameter struct (`params`) and the tool type with its
//! declaration (definition and settings, built once) and its `AgentTool`, `ToolDefinition`
//! and `ContextTools` impls.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, Ident, ItemFn, ReturnType};

use super::args::{Approval, Mode, Strict};
use super::ast::{Builtin, Param, ParamKind, Plain, ToolFn, is_macro_only, unraw};
use super::names::{params_ident, type_ident};
use crate::paths::Paths;

pub(crate) fn tool(tool: &ToolFn<'_>, paths: &Paths) -> TokenStream {
    let func = cleaned_fn(tool.original);
    let checks = checks(tool, paths);
    let params = super::params::params_struct(tool, paths);
    let tool_type = tool_type(tool, paths);
    quote! {
        #func
        #checks
        #params
        #tool_type
    }
}

/// The user's fn as written, minus what only the macro reads: `#[tool]`, `///`, `#[serde]`
/// and `#[schemars]` on parameters (rustc rejects them there). It stays callable directly.
pub(crate) fn cleaned_fn(original: &ItemFn) -> ItemFn {
    let mut func = original.clone();
    // A tool that never awaits is still a tool: `#[tool]` demands the `async`.
    func.attrs.push(syn::parse_quote!(
        #[allow(clippy::unused_async, reason = "`#[tool]` requires an async fn")]
    ));
    for input in &mut func.sig.inputs {
        if let FnArg::Typed(pat) = input {
            pat.attrs.retain(|attr| !is_macro_only(attr));
        }
    }
    func
}

/// The type the arguments deserialize into: `T` of `Args<T>`, or the generated struct.
fn args_type(tool: &ToolFn<'_>) -> TokenStream {
    match tool.args() {
        Some(inner) => quote!(#inner),
        None => {
            let ident = params_ident(tool);
            quote!(#ident)
        }
    }
}

/// One hidden fn whose bounds fail on the user's own tokens when a type cannot do its job,
/// with messages from the marker traits in `__private` (axum-macros' `debug_handler`
/// technique), and whose body checks the tool type's name (`name_check`).
///
/// Three rules need no check of their own: a future that is not `Send` and a return type that
/// does not convert are reported by the bounds of `__private::execute`, spanned at the fn's
/// name and its return type, and an extractor that does not implement `FromToolContext` by
/// the bound of `__private::extract`, spanned at its type (see `execute`). One fn rather
/// than one per rule: each item costs the user's crate compile time, on every build.
fn checks(tool: &ToolFn<'_>, paths: &Paths) -> TokenStream {
    let mut bounds = Vec::new();
    for param in &tool.params {
        match &param.kind {
            ParamKind::Plain(Plain { ty, .. }) | ParamKind::Args { inner: ty } => {
                let private = paths.private_at(ty.span());
                bounds.push(quote_spanned!(ty.span()=>
                    #ty: #private::DeserializeArgument + #private::DescribeArgument
                ));
            }
            ParamKind::State { inner } => {
                let private = paths.private_at(inner.span());
                bounds.push(quote_spanned!(inner.span()=> #inner: #private::ToolState));
            }
            // `Ctx<T>`'s extractor asks only what reading the context needs (`Clone`); that
            // the context crosses threads is this bound's, at `T`.
            ParamKind::Extract(extract) => {
                if let Some(Builtin::Ctx { inner }) = extract.builtin {
                    let private = paths.private_at(inner.span());
                    bounds.push(quote_spanned!(inner.span()=> #inner: #private::RunContextValue));
                }
            }
            ParamKind::Receiver => {}
        }
    }
    let name_check = name_check(tool, paths);
    quote! {
        const _: () = {
            #[allow(
                clippy::trait_duplication_in_bounds,
                unreachable_code,
                clippy::diverging_sub_expression,
                clippy::empty_loop,
                reason = "one bound per parameter, so each error lands on its own type; only type-checked, never run"
            )]
            fn __pi_check() where #(#bounds),* {
                #name_check
            }
        };
    }
}

/// The tool type's name must be free. A type of the user's with that name wins the name
/// (rustc reports E0428 and resolves every later use to the user's item), so the tool type is
/// reached through its value instead, the unit value or the tuple constructor, which a braced
/// struct or an enum of the user's does not shadow, and compared with what the name means.
fn name_check(tool: &ToolFn<'_>, paths: &Paths) -> TokenStream {
    let ty = type_ident(tool);
    let span = ty.span();
    let private = paths.private_at(span);
    let value = match tool.state() {
        Some(_) => quote_spanned!(span=> #ty(loop {})),
        None => quote_spanned!(span=> #ty),
    };
    quote_spanned! {span=>
        // Method syntax: `Self` comes from the value, see `NameCheck`.
        use #private::NameCheck as _;
        #value.names_the_tool::<#ty>();
    }
}

/// The return type's span, or the fn name's for `-> ()` written as nothing.
fn output_span(tool: &ToolFn<'_>) -> Span {
    match &tool.original.sig.output {
        ReturnType::Default => tool.original.sig.ident.span(),
        ReturnType::Type(_, ty) => ty.span(),
    }
}

/// The tool type, its constructor and the `AgentTool` and `ToolDefinition` impls.
fn tool_type(tool: &ToolFn<'_>, paths: &Paths) -> TokenStream {
    let private = paths.private();
    let vis = &tool.original.vis;
    let fn_ident = &tool.original.sig.ident;
    let ty = type_ident(tool);
    let name = tool.tool_name();
    let type_doc = format!("The `{name}` tool: calls [`{fn_ident}`] with the model's arguments.");

    let (definition, constructor) = match tool.state() {
        Some(state) => (
            quote! {
                // A tuple struct: its constructor is the value `name_check` compares.
                #[derive(Clone)]
                #vis struct #ty(#state);
            },
            quote! {
                /// The tool, holding the state every call receives a clone of.
                #vis fn new(state: #state) -> Self {
                    #ty(state)
                }
            },
        ),
        None => (
            quote! {
                #[derive(Debug, Clone, Copy, Default)]
                #vis struct #ty;
            },
            TokenStream::new(),
        ),
    };
    let debug = tool.state().map(|_| {
        quote! {
            #[automatically_derived]
            impl ::core::fmt::Debug for #ty {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    f.debug_struct(::core::stringify!(#ty)).finish_non_exhaustive()
                }
            }
        }
    });

    let description = match &tool.attrs.description {
        Some(lit) => quote!(#lit),
        None => tool.docs.to_expr(&private),
    };
    // `check` rejects a blank literal; only a doc built from `include_str!`/`concat!` is
    // left for the compiler to find empty.
    let description_check = (tool.attrs.description.is_none() && tool.docs.literal().is_none())
        .then(|| {
            quote! {
                const _: () = ::core::assert!(
                    !#ty::DESCRIPTION.is_empty(),
                    "a tool needs a description for the model: add a `///` doc comment to the fn, or write `#[tool(description = \"...\")]`",
                );
            }
        });
    let args_type = args_type(tool);
    let closed = tool.closed();
    let strict = match tool.attrs.strict {
        None => quote!(::core::option::Option::None),
        Some(strict) => {
            let strict = match strict {
                Strict::Prefer => quote!(Prefer),
                Strict::Require => quote!(Require),
            };
            quote!(::core::option::Option::Some(#private::Strictness::#strict))
        }
    };
    let label = tool.attrs.label.as_ref().map(|label| {
        quote! {
            fn label(&self) -> &str {
                #label
            }
        }
    });
    let mode = tool.attrs.mode.map(|mode| {
        let mode = match mode {
            Mode::Sequential => quote!(Sequential),
            Mode::Parallel => quote!(Parallel),
        };
        quote! {
            fn execution_mode(&self) -> #private::ExecutionMode {
                #private::ExecutionMode::#mode
            }
        }
    });
    let prepare = prepare(tool, &private);
    let settings = settings(tool, &private);
    let output_schema = output_schema(tool, &private);
    let execute = execute(tool, paths);
    let prompt = prompt(tool, &private);
    // What `AgentBuilder::context_tools` checks at compile time (any context without a
    // `Ctx`), spanned at the `Ctx<..>` parameter so a mismatch points there too. Only a type
    // spelled `Ctx<T>` has a `T` the macro can name; other extractors' context types are
    // known at run time only (the settings' `context_type`), which `build()` checks.
    let runs_with = tool.params.iter().find_map(|param| {
        let (ParamKind::Extract(extract), FnArg::Typed(pat)) = (&param.kind, param.original) else {
            return None;
        };
        let Some(Builtin::Ctx { inner }) = extract.builtin else {
            return None;
        };
        let span = pat.ty.span();
        let private = paths.private_at(span);
        Some(quote_spanned!(span=> where #private::Ctx<#inner>: #private::RunsWith<__T>))
    });

    quote! {
        #[doc = #type_doc]
        #definition

        impl #ty {
            /// The name the model calls.
            #vis const NAME: &'static str = #name;
            /// The description the model reads.
            #vis const DESCRIPTION: &'static str = #description;
            #constructor
        }

        #description_check

        #debug

        // One block, so that both impls reach the one `static` their declaration lives in.
        const _: () = {
            fn __pi_declaration() -> &'static #private::Declaration {
                static DECLARATION: #private::OnceLock<#private::Declaration> =
                    #private::OnceLock::new();
                #private::declaration(
                    &DECLARATION,
                    #ty::NAME,
                    #ty::DESCRIPTION,
                    #private::parameters_schema::<#args_type>,
                    #closed,
                    #strict,
                    #settings,
                )
            }

            #[automatically_derived]
            impl #private::AgentTool for #ty {
                fn definition(&self) -> &#private::Tool {
                    &__pi_declaration().definition
                }

                #label
                #prepare
                #mode
                #execute
            }

            #[automatically_derived]
            impl #private::ToolDefinition for #ty {
                #prompt
                #output_schema

                fn settings(&self) -> &#private::ToolSettings {
                    &__pi_declaration().settings
                }
            }
        };

        #[automatically_derived]
        impl<__T> #private::ContextTools<__T> for #ty #runs_with {}
    }
}

/// The tool's `ToolSettings`, as a non-capturing closure the declaration calls once: the
/// `exposure`, `approval` and policy keys (`timeout`, `retries`, `concurrency`,
/// `max_output`), and the context type of the extractors. A key left out leaves the default.
fn settings(tool: &ToolFn<'_>, private: &TokenStream) -> TokenStream {
    let exposure = tool.attrs.exposure.map(|exposure| {
        let variant = Ident::new(exposure.variant(), Span::call_site());
        quote!(.with_exposure(#private::Exposure::#variant))
    });
    let approval = approval(tool, private).map(|policy| quote!(.with_approval(#policy)));
    let policy = policy(tool, private).map(|policy| quote!(.with_policy(#policy)));
    let settings = quote!(#private::ToolSettings::new() #exposure #approval #policy);
    match context_type(tool, private) {
        None => quote!(|| #settings),
        Some(context_type) => quote! {
            || {
                let mut __settings = #settings;
                __settings.context_type = #context_type;
                __settings
            }
        },
    }
}

/// The first context type among the extractors' (`FromToolContext::context_type`), found by
/// autoref specialization so that a type that is no extractor, reported by `execute`, is not
/// reported again here. `None` without extractors: the settings keep the default (no context).
fn context_type(tool: &ToolFn<'_>, private: &TokenStream) -> Option<TokenStream> {
    let mut probes = tool.extractors().map(|extract| {
        let ty = extract.ty;
        quote!((&&#private::ExtractorProbe::<#ty>::new()).context_type())
    });
    let first = probes.next()?;
    Some(quote! {{
        #[allow(unused_imports)]
        use #private::{ContextTypeNone as _, ContextTypeOf as _};
        #first #(.or_else(|| #probes))*
    }})
}

/// The checked values of `timeout`, `retries`, `concurrency` and `max_output` as a
/// `ToolPolicy`; `None` without any of them.
fn policy(tool: &ToolFn<'_>, private: &TokenStream) -> Option<TokenStream> {
    let policy = &tool.attrs.policy;
    if policy.is_empty() {
        return None;
    }
    let timeout = policy
        .timeout_ms
        .map(|ms| quote!(.with_timeout(::core::time::Duration::from_millis(#ms))));
    let retries = policy
        .retries
        .map(|retries| quote!(.with_retries(#retries)));
    let concurrency = policy
        .concurrency
        .as_ref()
        .map(|(name, permits)| quote!(.with_concurrency(#name, #permits)));
    let max_output = policy
        .max_output
        .map(|bytes| quote!(.with_max_output(#bytes)));
    Some(quote!(#private::ToolPolicy::new() #timeout #retries #concurrency #max_output))
}

/// `output_schema`: `T`'s schema for a fn returning `Json<T>` or `Result<Json<T>, E>`, found by
/// autoref specialization on the return type (`None` for every other type).
fn output_schema(tool: &ToolFn<'_>, private: &TokenStream) -> TokenStream {
    let ReturnType::Type(_, output) = &tool.original.sig.output else {
        return TokenStream::new();
    };
    quote! {
        fn output_schema(&self) -> ::core::option::Option<#private::Value> {
            #[allow(unused_imports)]
            use #private::{OutputSchemaNone as _, OutputSchemaOf as _};
            (&&#private::OutputSchemaProbe::<#output>::new()).output_schema()
        }
    }
}

/// The `ApprovalPolicy`: `Always`, or the user's policy over the deserialized validated
/// arguments; `None` without the key.
fn approval(tool: &ToolFn<'_>, private: &TokenStream) -> Option<TokenStream> {
    Some(match tool.attrs.approval.as_ref()? {
        Approval::Always => quote!(#private::ApprovalPolicy::Always),
        Approval::When(path) => {
            let args_type = args_type(tool);
            // A fn item, not a closure: the policy is a plain `fn` pointer. The user's fn is
            // named at its own span, so a wrong signature is reported on it.
            let user = quote_spanned!(path.span()=> #path);
            quote! {{
                fn __pi_approval(args: &#private::Value) -> #private::Approval {
                    #private::approval_of::<#args_type>(args, #user)
                }
                #private::ApprovalPolicy::When(__pi_approval)
            }}
        }
    })
}

/// `prepare_arguments`: aliases renamed, then the `prepare = ...` shim. Absent when there is
/// neither, so the trait's zero-cost default applies.
fn prepare(tool: &ToolFn<'_>, private: &TokenStream) -> TokenStream {
    let aliases: Vec<TokenStream> = tool
        .plain()
        .filter_map(|plain| Some((plain.ident?, &plain.attrs.aliases)))
        .flat_map(|(ident, aliases)| {
            let current = unraw(ident);
            aliases.iter().map(move |alias| quote!((#alias, #current)))
        })
        .collect();
    let custom = tool
        .attrs
        .prepare
        .as_ref()
        .map(|path| quote_spanned!(path.span()=> ::core::option::Option::Some(#path)));
    if aliases.is_empty() && custom.is_none() {
        return TokenStream::new();
    }
    let custom = custom.unwrap_or_else(|| quote!(::core::option::Option::None));
    quote! {
        fn prepare_arguments<'__a>(
            &self,
            raw: &'__a #private::Value,
        ) -> ::core::result::Result<#private::Cow<'__a, #private::Value>, #private::ToolError> {
            #private::prepare(raw, &[#(#aliases),*], #custom)
        }
    }
}

/// `execute`: the shared `__private::execute` with a closure that spreads the arguments
/// over the fn's parameters in its own order; no `async` block of its own.
fn execute(tool: &ToolFn<'_>, paths: &Paths) -> TokenStream {
    let private = paths.private();
    let fn_ident = &tool.original.sig.ident;
    let ty = type_ident(tool);
    let args_type = args_type(tool);
    let ctx = if tool.extractors().next().is_some() {
        quote!(__ctx)
    } else {
        quote!(_)
    };
    let state = tool
        .state()
        .map(|_| quote!(let __state = ::core::clone::Clone::clone(&self.0);));
    // Each extractor in parameter order; the first rejection is the call's error. The fn is
    // named at the parameter's type, so a type that does not implement `FromToolContext` is
    // reported there.
    let mut extractions = Vec::new();
    let call_args: Vec<TokenStream> = tool
        .params
        .iter()
        .map(|param| match &param.kind {
            ParamKind::Plain(plain) => {
                let ident = plain
                    .ident
                    .map_or_else(|| Ident::new("_", Span::call_site()), Clone::clone);
                quote!(__args.#ident)
            }
            // Built through a trait named at the parameter's type, so that a type of the
            // user's spelled the same is reported there (see `__private::StateParam`).
            ParamKind::Args { inner } => {
                let ty = param_type(param);
                let private = paths.private_at(ty.span());
                quote_spanned!(ty.span()=> <#ty as #private::ArgsParam<#inner>>::from_args)
                    .into_iter()
                    .chain(quote!((__args)))
                    .collect()
            }
            ParamKind::State { inner } => {
                let ty = param_type(param);
                let private = paths.private_at(ty.span());
                quote_spanned!(ty.span()=> <#ty as #private::StateParam<#inner>>::from_state)
                    .into_iter()
                    .chain(quote!((__state)))
                    .collect()
            }
            ParamKind::Extract(extract) => {
                let local = format_ident!("__extract{}", extractions.len());
                let span = extract.ty.span();
                let extract_fn = paths.private_at(span);
                let extract_ty = extract.ty;
                let extract_fn = quote_spanned!(span=> #extract_fn::extract::<#extract_ty>);
                extractions.push(quote!(let #local = #extract_fn(&__ctx, #ty::NAME)?;));
                quote!(#local)
            }
            ParamKind::Receiver => quote!(__ctx),
        })
        .collect();
    // A non-`Send` future and an unconvertible return type are reported by these bounds
    // (`checks` has none for them): spanned at the user's tokens, the report names the fn's
    // own future and its return type rather than code of the macro's.
    let execute_fn = paths.private_at(fn_ident.span());
    let into_outcome = {
        let span = output_span(tool);
        let private = paths.private_at(span);
        quote_spanned!(span=> #private::IntoToolOutcome::into_outcome)
    };
    let closure = quote! {
        move |__args: #args_type, #ctx: #private::ToolContext| {
            #(#extractions)*
            ::core::result::Result::Ok(#fn_ident(#(#call_args),*))
        }
    };
    // The closure's future is the fn's: a bound on it (`Send`) is reported at the span of the
    // call, here the fn's name. Only the call's own tokens carry it: the locals keep the
    // macro's span, so they resolve as declared however the fn was written.
    let (params, context_var) = (quote!(params), quote!(__ctx));
    let execute = quote_spanned! {fn_ident.span()=>
        #execute_fn::execute(#ty::NAME, #params, #context_var, #closure, #into_outcome)
    };
    quote! {
        fn execute(
            &self,
            _call_id: ::std::string::String,
            params: #private::Value,
            __ctx: #private::ToolContext,
        ) -> #private::BoxFuture<'_, ::core::result::Result<#private::ToolResult, #private::ToolError>> {
            #state
            #execute
        }
    }
}

/// A typed parameter's type (a receiver's stands for itself: `check` rejects it).
fn param_type(param: &Param<'_>) -> TokenStream {
    match param.original {
        FnArg::Typed(pat) => pat.ty.to_token_stream(),
        FnArg::Receiver(receiver) => receiver.ty.to_token_stream(),
    }
}

/// The system prompt's snippet and guidelines.
fn prompt(tool: &ToolFn<'_>, private: &TokenStream) -> TokenStream {
    let snippet = tool.attrs.snippet.as_ref().map(|snippet| {
        quote! {
            fn prompt_snippet(&self) -> ::core::option::Option<#private::Cow<'_, str>> {
                ::core::option::Option::Some(#private::Cow::Borrowed(#snippet))
            }
        }
    });
    let guidelines = tool.attrs.guidelines.as_ref().map(|guidelines| {
        quote! {
            fn prompt_guidelines(&self) -> ::std::vec::Vec<#private::Cow<'_, str>> {
                ::std::vec![#(#private::Cow::Borrowed(#guidelines)),*]
            }
        }
    });
    quote!(#snippet #guidelines)
}
