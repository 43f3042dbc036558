//! Model providers: one folder per wire API (wire types, request conversion, stream
//! parsing), plus the faux model used by tests and examples.

mod model;

pub mod anthropic;
pub mod faux;
pub mod google;
pub mod openai;

pub(crate) mod compat;
pub(crate) mod output;
pub(crate) mod strict;
pub(crate) mod transform;

pub mod http;
pub mod presets;

pub use model::{Api, Compat, Model};
