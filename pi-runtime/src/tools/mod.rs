//! Built-in coding tools (read, write, edit, bash) and the per-file mutation queue (SPEC §9).
