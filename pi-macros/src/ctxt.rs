//! Error accumulation, so one compile reports every independent mistake (serde_derive's
//! `Ctxt`): stages push errors and keep going; `check` folds them into one `syn::Error`.

use std::cell::RefCell;
use std::fmt::Display;

use quote::ToTokens;

/// Collects errors. Dropping it without calling [`Ctxt::check`] is a bug in the macro, so it
/// panics (only ever at expansion time, inside the compiler).
#[derive(Default)]
pub(crate) struct Ctxt {
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    pub(crate) fn new() -> Self {
        Ctxt {
            errors: RefCell::new(Some(Vec::new())),
        }
    }

    /// An error spanning `tokens`.
    pub(crate) fn error_spanned_by<T: ToTokens, M: Display>(&self, tokens: T, message: M) {
        self.syn_error(syn::Error::new_spanned(tokens.into_token_stream(), message));
    }

    /// An error from a parser.
    pub(crate) fn syn_error(&self, error: syn::Error) {
        self.errors
            .borrow_mut()
            .as_mut()
            .expect("Ctxt::check was already called")
            .push(error);
    }

    /// All errors pushed so far, combined; `Ok` when there were none.
    pub(crate) fn check(self) -> syn::Result<()> {
        let errors = self
            .errors
            .borrow_mut()
            .take()
            .expect("Ctxt::check was already called");
        let mut errors = errors.into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for error in errors {
            combined.combine(error);
        }
        Err(combined)
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !std::thread::panicking() && self.errors.borrow().is_some() {
            panic!("forgot to call Ctxt::check");
        }
    }
}
