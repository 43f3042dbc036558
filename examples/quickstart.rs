//! The README's main command: `cargo run --example quickstart`.

fn main() {}
