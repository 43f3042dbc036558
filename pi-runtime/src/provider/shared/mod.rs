//! What the wire APIs share: tool-choice words, compatibility flags, the strict-schema rewrite, history
//! conversion across models, thinking levels, token counts and tool-call ids.

pub(crate) mod choice;
pub(crate) mod compat;
pub(crate) mod ids;
pub(crate) mod strict;
pub(crate) mod thinking;
pub(crate) mod tokens;
pub(crate) mod transform;
