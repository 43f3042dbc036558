//! History transformation shared by all providers (SPEC §7.1).
