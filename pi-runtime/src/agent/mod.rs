//! The agent loop (SPEC §5), the `Agent` and its builder, agent events and hooks.
