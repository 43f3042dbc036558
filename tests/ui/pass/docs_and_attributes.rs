#![deny(missing_docs, missing_debug_implementations, unused_qualifications, unreachable_pub)]
//! A crate that denies the usual documentation and hygiene lints.

use pi_runtime::{ToolDefinition, tool};

#[doc = concat!("Built ", "by a macro.")]
#[tool]
pub async fn built(
    /// How many, at least one.
    #[serde(default)]
    #[schemars(range(min = 1))]
    count: u32,
    /// A keyword as a name.
    r#type: String,
    depth: Option<u8>,
) -> String {
    format!("{count} {type} {depth:?}", type = r#type)
}

fn assert_tool<T: ToolDefinition>() {}

fn main() {
    assert_tool::<Built>();
}
