//! The one file that spells the runtime's path. Generated code reaches everything through
//! `::pi_runtime::__private` (or `<crate>::__private` with `crate = "..."`), so a user's crate
//! needs no dependency but `pi-runtime` and no `use` statements.

use proc_macro2::TokenStream;
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
