//! Example placeholder.

fn main() {}
