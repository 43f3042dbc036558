//! The names `#[tool]` gives what it generates: the tool type and its argument struct.

use quote::format_ident;
use syn::Ident;

use super::ast::{ToolFn, unraw};

/// The tool type: `type_name = "..."`, else the fn's name in upper camel case
/// (`read_file` → `ReadFile`).
pub(super) fn type_ident(tool: &ToolFn<'_>) -> Ident {
    // An invalid `type_name` is reported by `check`; the fallback still needs an ident.
    if let Some(type_name) = &tool.attrs.type_name
        && let Ok(ident) = syn::parse_str::<Ident>(&type_name.value())
    {
        return Ident::new(&ident.to_string(), type_name.span());
    }
    let ident = &tool.original.sig.ident;
    let camel = upper_camel(&unraw(ident));
    // `fn __()` has no word to capitalise; an empty ident would panic.
    let camel = if camel.is_empty() {
        "Tool".to_owned()
    } else {
        camel
    };
    Ident::new(&camel, ident.span())
}

fn upper_camel(snake: &str) -> String {
    snake
        .split('_')
        .filter(|word| !word.is_empty())
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect()
            })
        })
        .collect()
}

/// The generated argument struct: the tool type's name and `Params` (`ReadFileParams`).
pub(super) fn params_ident(tool: &ToolFn<'_>) -> Ident {
    let ty = type_ident(tool);
    format_ident!("{}Params", ty, span = ty.span())
}

#[cfg(test)]
mod tests {
    use super::upper_camel;

    #[test]
    fn tool_types_are_upper_camel_case() {
        assert_eq!(upper_camel("bash"), "Bash");
        assert_eq!(upper_camel("submit_analysis"), "SubmitAnalysis");
        assert_eq!(upper_camel("_read__file2"), "ReadFile2");
    }
}
