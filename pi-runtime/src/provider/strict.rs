//! Constrained sampling: the strict-schema rewrite and its reasons (SPEC §7.2).
