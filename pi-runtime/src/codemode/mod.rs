//! Code mode (pi 1.6's `codemode` tool): the model writes one JavaScript program that calls
//! many tools, and only what the program returns reaches the model's context.
//!
//! - [`to_codemode_identifier`], [`schema_to_type`], [`render_declarations`]: what scripts
//!   see of the tools, as TypeScript declarations built from their schemas.
//! - [`parse_codemode_source`]: the script text with its optional `// @options:` line.
//! - [`prepare_loadout`]: the codemode tool's description, listing the tools scripts can call
//!   within a token budget, and the note on declared tools that scripts can call too.

mod declarations;
mod identifier;
mod loadout;
mod source;

pub use declarations::{
    Declaration, Global, INPUT_SCHEMA_MAX_CHARS, render_declarations, render_tool_sample,
    render_tool_signature, resolve_schema_ref, schema_to_type,
};
pub use identifier::to_codemode_identifier;
pub use loadout::{
    CODEMODE_TOOL_NAME, CodemodeMode, CodemodeSettings, DEFAULT_INLINE_BUDGET, Loadout,
    LoadoutTool, Namespace, PROMPT_GUIDELINE, PROMPT_SNIPPET, base_description,
    codemode_declaration, is_callable, prepare_loadout,
};
pub use source::{
    CodemodeSource, MAX_TIMEOUT_MS, OPTIONS_PREFIX, SOURCE_GRAMMAR, SourceError, SourceOptions,
    parse_codemode_source,
};
