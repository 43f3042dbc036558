//! Compile-fail and compile-pass tests of `#[tool]`: every mistake gets an error on the
//! offending token that says what to write instead. The `.stderr` files belong to the
//! compiler pinned in `rust-toolchain.toml`; regenerate them with `TRYBUILD=overwrite` and
//! review the diff like code.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("ui/pass/*.rs");
    cases.compile_fail("ui/fail/*.rs");
}
