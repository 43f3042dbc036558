//! The one doc-comment rule, used for the tool description and every parameter description:
//! gather every `#[doc]` attribute in order (keeping `include_str!`/`concat!` values as
//! expressions), strip one leading space from each literal line, join them with `\n`, and
//! trim the result (`__private::doc_text`, a `const fn`, does the trim so it also covers
//! expressions). The same rule schemars applies, minus its "`# heading` becomes the title".

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::{Attribute, Expr, ExprLit, Lit};

/// The doc comment of an item or parameter.
pub(crate) struct Docs {
    lines: Vec<Line>,
}

enum Line {
    Literal(String),
    Expr(Expr),
}

impl Docs {
    /// The `#[doc]` attributes among `attrs`.
    pub(crate) fn from_attrs(attrs: &[Attribute]) -> Self {
        let lines = attrs
            .iter()
            .filter(|attr| attr.path().is_ident("doc"))
            .filter_map(|attr| attr.meta.require_name_value().ok())
            .map(|meta| match &meta.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(text),
                    ..
                }) => {
                    let text = text.value();
                    Line::Literal(text.strip_prefix(' ').unwrap_or(&text).to_owned())
                }
                expr => Line::Expr(expr.clone()),
            })
            .collect();
        Docs { lines }
    }

    /// Certainly empty: no doc at all, or only blank literal lines. (A doc built from an
    /// expression is assumed non-empty; a const assertion catches the rest.)
    pub(crate) fn is_blank(&self) -> bool {
        self.lines
            .iter()
            .all(|line| matches!(line, Line::Literal(text) if text.trim().is_empty()))
    }

    /// The text, when every line is a literal: the rule applied here, so the expansion
    /// carries a plain string and the compiler evaluates nothing.
    pub(crate) fn literal(&self) -> Option<String> {
        let mut joined = String::new();
        for (i, line) in self.lines.iter().enumerate() {
            let Line::Literal(text) = line else {
                return None;
            };
            if i > 0 {
                joined.push('\n');
            }
            joined.push_str(text);
        }
        // `doc_text`'s `str::trim_ascii`: ASCII whitespace only, as at compile time.
        Some(
            joined
                .trim_matches(|c: char| c.is_ascii_whitespace())
                .to_owned(),
        )
    }

    /// The description as a `&'static str` expression, evaluated at compile time: a literal
    /// when it can be, else `doc_text(concat!(..))`.
    pub(crate) fn to_expr(&self, private: &TokenStream) -> TokenStream {
        if let Some(text) = self.literal() {
            return quote!(#text);
        }
        let mut parts = Vec::with_capacity(self.lines.len() * 2);
        for (i, line) in self.lines.iter().enumerate() {
            if i > 0 {
                parts.push(quote!("\n"));
            }
            parts.push(match line {
                Line::Literal(text) => text.to_token_stream(),
                Line::Expr(expr) => expr.to_token_stream(),
            });
        }
        quote!(#private::doc_text(::core::concat!(#(#parts),*)))
    }
}
