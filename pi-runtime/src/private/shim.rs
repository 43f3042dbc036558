//! The `prepare_arguments` shim `#[tool]` generates: old argument names renamed to
//! current ones, then the user's own shim if any. Unchanged arguments are returned borrowed,
//! so the common case costs no copy.

use std::borrow::Cow;

use serde_json::Value;

use crate::tool::ToolError;

/// Rename the keys of `raw` named by `aliases` (`(old, current)` pairs). An old key takes the
/// position of the key it replaces; when the model sent both names, the current one wins and
/// the old one is dropped (pi's `raw.path ?? raw.filePath`). Non-objects pass through.
#[must_use]
pub fn rename_aliases<'a>(raw: &'a Value, aliases: &[(&str, &str)]) -> Cow<'a, Value> {
    let Value::Object(object) = raw else {
        return Cow::Borrowed(raw);
    };
    if !aliases.iter().any(|(old, _)| object.contains_key(*old)) {
        return Cow::Borrowed(raw);
    }
    let current_of = |key: &str| {
        aliases
            .iter()
            .find(|(old, _)| *old == key)
            .map(|&(_, current)| current)
    };
    let mut renamed = serde_json::Map::with_capacity(object.len());
    for (key, value) in object {
        match current_of(key) {
            Some(current) if object.contains_key(current) => {}
            Some(current) => {
                // Two old names for one parameter: the first one sent wins.
                renamed
                    .entry(current.to_owned())
                    .or_insert_with(|| value.clone());
            }
            None => {
                renamed.insert(key.clone(), value.clone());
            }
        }
    }
    Cow::Owned(Value::Object(renamed))
}

/// The signature of a `#[tool(prepare = ...)]` shim: `AgentTool::prepare_arguments` as a
/// free fn.
pub type PrepareFn = fn(&Value) -> Result<Cow<'_, Value>, ToolError>;

/// The whole generated shim: aliases first, so a custom `prepare` fn sees current names.
///
/// # Errors
/// The custom shim failed; its error is the call's error text.
pub fn prepare<'a>(
    raw: &'a Value,
    aliases: &[(&str, &str)],
    custom: Option<PrepareFn>,
) -> Result<Cow<'a, Value>, ToolError> {
    let renamed = rename_aliases(raw, aliases);
    let Some(custom) = custom else {
        return Ok(renamed);
    };
    match renamed {
        Cow::Borrowed(raw) => custom(raw),
        Cow::Owned(renamed) => Ok(Cow::Owned(custom(&renamed)?.into_owned())),
    }
}
