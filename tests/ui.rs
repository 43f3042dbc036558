//! Compile-fail and compile-pass tests of `#[tool]`.
