//! The conformance runner: JSON Lines requests on stdin, answers on stdout
//! (`../shared/conformance/PROTOCOL.md`).

fn main() {}
