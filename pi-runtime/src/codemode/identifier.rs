//! `toCodemodeIdentifier`: the name a script uses for a tool.

/// The identifier scripts use for the tool `name`: every character (code point) that is not
/// valid at its place in a JavaScript identifier (first `[A-Za-z_$]`, later `[A-Za-z0-9_$]`)
/// becomes `_`; an empty name is `_`.
///
/// ```
/// use pi_runtime::__conformance::to_codemode_identifier;
///
/// assert_eq!(to_codemode_identifier("my-tool"), "my_tool");
/// assert_eq!(to_codemode_identifier("9lives"), "_lives");
/// assert_eq!(to_codemode_identifier("café"), "caf_");
/// assert_eq!(to_codemode_identifier(""), "_");
/// ```
pub fn to_codemode_identifier(name: &str) -> String {
    let mut identifier = String::with_capacity(name.len());
    for c in name.chars() {
        let valid = c.is_ascii_alphabetic()
            || c == '_'
            || c == '$'
            || (!identifier.is_empty() && c.is_ascii_digit());
        identifier.push(if valid { c } else { '_' });
    }
    if identifier.is_empty() {
        identifier.push('_');
    }
    identifier
}

/// Whether `name` is an identifier as it stands (`^[A-Za-z_$][A-Za-z0-9_$]*$`).
pub(crate) fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}
