//! The `#[tool]` attribute. Depend on `pi-runtime`, which re-exports it and documents it.
