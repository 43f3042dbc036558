//! The one file that spells the runtime's path. Generated code reaches everything through
//! `::pi_runtime::__private` (or `<crate>::__private` with `crate = "..."`), so a user's crate
//! needs no dependency but `pi-runtime` and no `use` statements.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};

/// Where the runtime crate is.
pub(crate) struct Paths {
    root: syn::Path,
}

impl Paths {
    /// `::pi_runtime`, or the `crate = "..."` override (for crates that re-export pi-runtime
    /// under another name).
    pub(crate) fn new(krate: Option<syn::Path>) -> Self {
        Paths {
            root: krate.unwrap_or_else(|| syn::parse_quote!(::pi_runtime)),
        }
    }

    /// `::pi_runtime::__private`.
    pub(crate) fn private(&self) -> TokenStream {
        let root = &self.root;
        quote!(#root::__private)
    }

    /// `::pi_runtime::__private` with every token at `span`. A bound in a hidden check fn is
    /// reported at its trait path's span, so the path must carry the user's span for the
    /// error to land on the user's type rather than on `#[tool]`.
    pub(crate) fn private_at(&self, span: Span) -> TokenStream {
        self.private()
            .into_iter()
            .map(|mut token| {
                token.set_span(span);
                token
            })
            .collect()
    }

    /// The string serde's `#[serde(crate = "...")]` takes.
    pub(crate) fn serde(&self) -> String {
        self.in_private("serde")
    }

    /// The string schemars' `#[schemars(crate = "...")]` takes.
    pub(crate) fn schemars(&self) -> String {
        self.in_private("schemars")
    }

    fn in_private(&self, krate: &str) -> String {
        // `ToTokens` prints `:: pi_runtime`; serde and schemars parse the string as a path,
        // so the spaces are harmless, but a tidy path reads better in expansions.
        let root = self.root.to_token_stream().to_string().replace(' ', "");
        format!("{root}::__private::{krate}")
    }
}
