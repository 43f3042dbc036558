//! Compatibility detection from the provider and base URL (SPEC §7.3, §7.4).
