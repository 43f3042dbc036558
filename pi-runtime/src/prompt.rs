//! The system prompt's tool section (SPEC §8).
