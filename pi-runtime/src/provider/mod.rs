//! Model providers: one folder per wire API (wire types, request conversion, stream
//! parsing), plus the faux model used by tests and examples.

mod model;

pub use model::{Api, Compat, Model};
