//! The attribute grammar: `#[tool(key = value, ...)]` on the fn and `#[tool(alias = ...)]` or
//! `#[tool(extract)]` on a parameter. Strict: an unknown key, a repeated key or a bad value is
//! an error on that token saying what to write instead; parsing goes on after a bad value so
//! one compile reports every mistake.

use proc_macro2::TokenStream;
use syn::meta::ParseNestedMeta;
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{LitBool, LitInt, LitStr, Token};

use super::policy::{self, Policy};

use crate::ctxt::Ctxt;

pub(crate) const NAME: &str = "name";
pub(crate) const TYPE_NAME: &str = "type_name";
pub(crate) const LABEL: &str = "label";
pub(crate) const DESCRIPTION: &str = "description";
pub(crate) const SNIPPET: &str = "snippet";
pub(crate) const GUIDELINES: &str = "guidelines";
pub(crate) const MODE: &str = "mode";
pub(crate) const EXPOSURE: &str = "exposure";
pub(crate) const STRICT: &str = "strict";
pub(crate) const PREPARE: &str = "prepare";
pub(crate) const APPROVAL: &str = "approval";
pub(crate) const CLOSED: &str = "closed";
pub(crate) const TIMEOUT: &str = "timeout";
pub(crate) const RETRIES: &str = "retries";
pub(crate) const CONCURRENCY: &str = "concurrency";
pub(crate) const MAX_OUTPUT: &str = "max_output";
pub(crate) const CRATE: &str = "crate";
pub(crate) const ALIAS: &str = "alias";
pub(crate) const EXTRACT: &str = "extract";

/// Every key `#[tool(...)]` accepts on a parameter.
const PARAM_KEYS: &[&str] = &[ALIAS, EXTRACT];

/// Every key `#[tool(...)]` accepts on the fn, in the order the docs list them.
const TOOL_KEYS: &[&str] = &[
    NAME,
    TYPE_NAME,
    LABEL,
    DESCRIPTION,
    SNIPPET,
    GUIDELINES,
    MODE,
    EXPOSURE,
    STRICT,
    PREPARE,
    APPROVAL,
    CLOSED,
    TIMEOUT,
    RETRIES,
    CONCURRENCY,
    MAX_OUTPUT,
    CRATE,
];

/// `mode = "..."`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Sequential,
    Parallel,
}

/// `exposure = "..."`: the runtime's `Exposure` variant it names.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exposure {
    Direct,
    ModelOnly,
    Codemode,
    Deferred,
    Hidden,
}

impl Exposure {
    const ALL: [(&'static str, Exposure); 5] = [
        ("direct", Exposure::Direct),
        ("model-only", Exposure::ModelOnly),
        ("codemode", Exposure::Codemode),
        ("deferred", Exposure::Deferred),
        ("hidden", Exposure::Hidden),
    ];

    /// The variant's name in `pi_runtime::tool::Exposure`.
    pub(crate) fn variant(self) -> &'static str {
        match self {
            Exposure::Direct => "Direct",
            Exposure::ModelOnly => "ModelOnly",
            Exposure::Codemode => "Codemode",
            Exposure::Deferred => "Deferred",
            Exposure::Hidden => "Hidden",
        }
    }
}

/// `approval = "always"` or `approval = my_policy`.
pub(crate) enum Approval {
    Always,
    /// A `fn(&Params) -> Approval` of the validated arguments.
    When(syn::Path),
}

/// `strict = "..."`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strict {
    Prefer,
    Require,
}

/// The keys of `#[tool(...)]` on the fn. Values keep their own tokens (`LitStr`, `Path`),
/// so later stages can point errors at them.
#[derive(Default)]
pub(crate) struct ToolAttrs {
    pub(crate) name: Option<LitStr>,
    pub(crate) type_name: Option<LitStr>,
    pub(crate) label: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) snippet: Option<LitStr>,
    pub(crate) guidelines: Option<Vec<LitStr>>,
    pub(crate) mode: Option<Mode>,
    pub(crate) exposure: Option<Exposure>,
    pub(crate) strict: Option<Strict>,
    pub(crate) prepare: Option<syn::Path>,
    pub(crate) approval: Option<Approval>,
    pub(crate) closed: Option<LitBool>,
    /// `timeout`, `retries`, `concurrency`, `max_output`, parsed and checked.
    pub(crate) policy: Policy,
    pub(crate) krate: Option<syn::Path>,
}

impl ToolAttrs {
    /// Parse the attribute's arguments; errors go to `cx`.
    pub(crate) fn parse(cx: &Ctxt, args: TokenStream) -> Self {
        let mut attrs = ToolAttrs::default();
        let parser = syn::meta::parser(|meta| attrs.parse_key(cx, &meta));
        if let Err(error) = parser.parse2(args) {
            cx.syn_error(error);
        }
        attrs
    }

    fn parse_key(&mut self, cx: &Ctxt, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        let key = meta.path.clone();
        let Some(ident) = key.get_ident().map(ToString::to_string) else {
            return Err(meta.error(unknown_key_message(&key, TOOL_KEYS)));
        };
        match ident.as_str() {
            NAME => set(cx, &mut self.name, key, lit_str(meta)?),
            TYPE_NAME => set(cx, &mut self.type_name, key, lit_str(meta)?),
            LABEL => set(cx, &mut self.label, key, lit_str(meta)?),
            DESCRIPTION => set(cx, &mut self.description, key, lit_str(meta)?),
            SNIPPET => set(cx, &mut self.snippet, key, lit_str(meta)?),
            GUIDELINES => {
                let guidelines = lit_str_list(meta.value()?, GUIDELINES)?;
                set(cx, &mut self.guidelines, key, guidelines);
            }
            MODE => {
                let lit = lit_str(meta)?;
                match lit.value().as_str() {
                    "sequential" => set(cx, &mut self.mode, key, Mode::Sequential),
                    "parallel" => set(cx, &mut self.mode, key, Mode::Parallel),
                    other => cx.error_spanned_by(
                        &lit,
                        format!(
                            "unknown execution mode `{other}`: write `mode = \"sequential\"` or `mode = \"parallel\"`"
                        ),
                    ),
                }
            }
            EXPOSURE => {
                let lit = lit_str(meta)?;
                let value = lit.value();
                match Exposure::ALL.iter().find(|(name, _)| *name == value) {
                    Some(&(_, exposure)) => set(cx, &mut self.exposure, key, exposure),
                    None => cx.error_spanned_by(
                        &lit,
                        format!(
                            "unknown exposure `{value}`: write `exposure = \"direct\"` (declared from the start), \"deferred\" (declared once `tool_search` loads it), \"codemode\", \"model-only\" or \"hidden\""
                        ),
                    ),
                }
            }
            STRICT => {
                let lit = lit_str(meta)?;
                match lit.value().as_str() {
                    "prefer" => set(cx, &mut self.strict, key, Strict::Prefer),
                    "require" => set(cx, &mut self.strict, key, Strict::Require),
                    other => cx.error_spanned_by(
                        &lit,
                        format!(
                            "unknown strictness `{other}`: write `strict = \"prefer\"` (strict where the provider allows it) or `strict = \"require\"` (strict or the request fails)"
                        ),
                    ),
                }
            }
            PREPARE => {
                let path: syn::Path = meta.value()?.parse().map_err(|error| {
                    syn::Error::new(
                        error.span(),
                        "expected a path to a fn: write `prepare = my_shim` where `fn my_shim(raw: &Value) -> Result<Cow<'_, Value>, ToolError>`",
                    )
                })?;
                set(cx, &mut self.prepare, key, path);
            }
            APPROVAL => {
                let value = meta.value()?;
                if value.peek(LitStr) {
                    let lit: LitStr = value.parse()?;
                    if lit.value() == "always" {
                        set(cx, &mut self.approval, key, Approval::Always);
                    } else {
                        cx.error_spanned_by(
                            &lit,
                            format!(
                                "unknown approval `{}`: write `approval = \"always\"`, or `approval = my_policy` where `fn my_policy(args: &Params) -> Approval`",
                                lit.value()
                            ),
                        );
                    }
                } else {
                    let path: syn::Path = value.parse().map_err(|error| {
                        syn::Error::new(
                            error.span(),
                            "expected `approval = \"always\"` or a path to a fn: write `approval = my_policy` where `fn my_policy(args: &Params) -> Approval`",
                        )
                    })?;
                    set(cx, &mut self.approval, key, Approval::When(path));
                }
            }
            CLOSED => {
                let value: LitBool = meta.value()?.parse().map_err(|error| {
                    syn::Error::new(error.span(), "expected `closed = true` or `closed = false`")
                })?;
                set(cx, &mut self.closed, key, value);
            }
            TIMEOUT => {
                let lit = lit_str(meta)?;
                match policy::duration_ms(&lit.value()) {
                    Ok(ms) => set(cx, &mut self.policy.timeout_ms, key, ms),
                    Err(why) => cx.error_spanned_by(
                        &lit,
                        format!("invalid timeout `{}`: {why}", lit.value()),
                    ),
                }
            }
            RETRIES => {
                let lit: LitInt = meta.value()?.parse().map_err(|error| {
                    syn::Error::new(error.span(), "expected a whole number: write `retries = 3`")
                })?;
                match lit.base10_parse::<u32>() {
                    Ok(retries) => set(cx, &mut self.policy.retries, key, retries),
                    Err(_) => cx.error_spanned_by(
                        &lit,
                        format!("invalid retries `{lit}`: the failed calls one run allows is a whole number from 0 to 4294967295, e.g. `retries = 3`"),
                    ),
                }
            }
            CONCURRENCY => {
                let lit = lit_str(meta)?;
                match policy::concurrency(&lit.value()) {
                    Ok(limit) => set(cx, &mut self.policy.concurrency, key, limit),
                    Err(why) => cx.error_spanned_by(
                        &lit,
                        format!("invalid concurrency `{}`: {why}", lit.value()),
                    ),
                }
            }
            MAX_OUTPUT => {
                let lit = lit_str(meta)?;
                match policy::size_bytes(&lit.value()) {
                    Ok(bytes) => set(cx, &mut self.policy.max_output, key, bytes),
                    Err(why) => cx.error_spanned_by(
                        &lit,
                        format!("invalid max_output `{}`: {why}", lit.value()),
                    ),
                }
            }
            CRATE => {
                let lit = lit_str(meta)?;
                match lit.parse::<syn::Path>() {
                    Ok(path) => set(cx, &mut self.krate, key, path),
                    Err(_) => cx.error_spanned_by(
                        &lit,
                        "expected the path of the pi-runtime crate: write e.g. `crate = \"::my_crate::pi_runtime\"`",
                    ),
                }
            }
            _ => {
                cx.error_spanned_by(&key, unknown_key_message(&key, TOOL_KEYS));
                skip_value(meta)?;
            }
        }
        Ok(())
    }
}

/// The keys of `#[tool(...)]` on a parameter.
#[derive(Default)]
pub(crate) struct ParamAttrs {
    /// Old names the generated `prepare_arguments` shim renames to this parameter's name.
    pub(crate) aliases: Vec<LitStr>,
    /// The `alias` key, for errors about a misplaced alias.
    pub(crate) alias_key: Option<syn::Path>,
    /// The `extract` key: the parameter is built by `FromToolContext`, not sent by the model.
    pub(crate) extract: Option<syn::Path>,
}

impl ParamAttrs {
    /// Parse every `#[tool(...)]` among a parameter's attributes; errors go to `cx`.
    pub(crate) fn parse(cx: &Ctxt, attrs: &[syn::Attribute]) -> Self {
        let mut parsed = ParamAttrs::default();
        for attr in attrs.iter().filter(|attr| attr.path().is_ident("tool")) {
            let result = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident(EXTRACT) {
                    parsed.parse_extract(cx, &meta)
                } else if meta.path.is_ident(ALIAS) {
                    parsed.parse_alias(cx, &meta)
                } else {
                    cx.error_spanned_by(&meta.path, unknown_key_message(&meta.path, PARAM_KEYS));
                    skip_value(&meta)
                }
            });
            if let Err(error) = result {
                cx.syn_error(error);
            }
        }
        parsed
    }

    /// `extract`, a flag: `#[tool(extract)]`.
    fn parse_extract(&mut self, cx: &Ctxt, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        if !meta.input.is_empty() && !meta.input.peek(Token![,]) {
            cx.error_spanned_by(
                &meta.path,
                "`extract` takes no value: write `#[tool(extract)]`",
            );
            return skip_value(meta);
        }
        set(cx, &mut self.extract, meta.path.clone(), meta.path.clone());
        Ok(())
    }

    /// `alias = "old"` or `alias = ["old", "older"]`.
    fn parse_alias(&mut self, cx: &Ctxt, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        if self.alias_key.is_some() {
            cx.error_spanned_by(
                &meta.path,
                "duplicate `alias` key: list every old name once, `alias = [\"filePath\", \"file\"]`",
            );
            return skip_value(meta);
        }
        self.alias_key = Some(meta.path.clone());
        let value = meta.value()?;
        self.aliases = if value.peek(syn::token::Bracket) {
            lit_str_list(value, ALIAS)?
        } else {
            vec![value.parse::<LitStr>().map_err(|error| {
                syn::Error::new(
                    error.span(),
                    "expected the old name as a string: write `alias = \"filePath\"`",
                )
            })?]
        };
        Ok(())
    }
}

/// Whether a `#[tool(...)]` attribute has `key` among its keys (unparseable ones report their
/// own errors through [`ParamAttrs::parse`]; here they only mean "no").
pub(crate) fn mentions_key(attr: &syn::Attribute, key: &str) -> bool {
    let mut found = false;
    let _ = attr.parse_nested_meta(|meta| {
        found |= meta.path.is_ident(key);
        let _ = skip_value(&meta);
        Ok(())
    });
    found
}

/// Store a key's value, or report the repetition at the second key.
fn set<T>(cx: &Ctxt, slot: &mut Option<T>, key: syn::Path, value: T) {
    if slot.is_some() {
        let name = key.get_ident().map(ToString::to_string).unwrap_or_default();
        cx.error_spanned_by(
            &key,
            format!("duplicate `{name}` key: `#[tool]` takes each key once, remove this one"),
        );
    } else {
        *slot = Some(value);
    }
}

fn lit_str(meta: &ParseNestedMeta<'_>) -> syn::Result<LitStr> {
    let key = meta
        .path
        .get_ident()
        .map(ToString::to_string)
        .unwrap_or_default();
    meta.value()?.parse::<LitStr>().map_err(|error| {
        syn::Error::new(
            error.span(),
            format!("expected a string literal: write `{key} = \"...\"`"),
        )
    })
}

fn lit_str_list(value: ParseStream<'_>, key: &str) -> syn::Result<Vec<LitStr>> {
    let expected =
        || format!("expected a list of string literals: write `{key} = [\"...\", \"...\"]`");
    if !value.peek(syn::token::Bracket) {
        return Err(value.error(expected()));
    }
    let content;
    syn::bracketed!(content in value);
    let list = Punctuated::<LitStr, Token![,]>::parse_terminated(&content)
        .map_err(|error| syn::Error::new(error.span(), expected()))?;
    Ok(list.into_iter().collect())
}

/// Consume an unknown key's value (`= expr` or `(...)`), so parsing continues with the next
/// key and its errors are reported too.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _content;
        syn::parenthesized!(_content in meta.input);
    }
    Ok(())
}

fn unknown_key_message(key: &syn::Path, known: &[&str]) -> String {
    let name = quote::quote!(#key).to_string().replace(' ', "");
    let list = known
        .iter()
        .map(|key| format!("`{key}`"))
        .collect::<Vec<_>>()
        .join(", ");
    match closest(&name, known) {
        Some(suggestion) => {
            format!("unknown `#[tool]` key `{name}`: did you mean `{suggestion}`? (keys: {list})")
        }
        None => format!("unknown `#[tool]` key `{name}`: expected one of {list}"),
    }
}

/// The known key within edit distance 2 of `name`, if any: typo help for unknown keys.
fn closest<'k>(name: &str, known: &[&'k str]) -> Option<&'k str> {
    known
        .iter()
        .map(|candidate| (edit_distance(name, candidate), *candidate))
        .filter(|(distance, _)| *distance <= 2)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current.push(substitution.min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::{TOOL_KEYS, closest, edit_distance};

    #[test]
    fn edit_distance_counts_single_character_edits() {
        assert_eq!(edit_distance("snippet", "snippet"), 0);
        assert_eq!(edit_distance("snipet", "snippet"), 1);
        assert_eq!(edit_distance("nmae", "name"), 2);
        assert_eq!(edit_distance("", "mode"), 4);
    }

    #[test]
    fn typos_suggest_the_nearest_key() {
        assert_eq!(closest("snipet", TOOL_KEYS), Some("snippet"));
        assert_eq!(closest("lable", TOOL_KEYS), Some("label"));
        assert_eq!(closest("colour", TOOL_KEYS), None);
    }
}
