//! Tools written by a crate that depends on pi-runtime alone.
