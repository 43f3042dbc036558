//! The names an MCP server's tools get in the agent (pi's): `mcp__<server>__<tool>`,
//! sanitized, with a hash suffix when it is too long or taken.

use std::collections::{HashMap, HashSet};

use sha2::{Digest, Sha256};

/// The longest tool name providers accept.
const MAX_TOOL_NAME_LENGTH: usize = 64;
/// Hex digits of the hash suffix.
const HASH_DIGITS: usize = 8;

/// `mcp__<server>__<tool>` with every UTF-16 code unit outside `[A-Za-z0-9_]` replaced by `_`
/// (a character outside the BMP, two code units, becomes `__`). The result is ASCII.
pub(crate) fn plain_name(server: &str, tool: &str) -> String {
    let mut name = String::with_capacity(7 + server.len() + tool.len());
    name.push_str("mcp__");
    sanitize_into(server, &mut name);
    name.push_str("__");
    sanitize_into(tool, &mut name);
    name
}

fn sanitize_into(text: &str, out: &mut String) {
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            out.push(c);
        } else {
            for _ in 0..c.len_utf16() {
                out.push('_');
            }
        }
    }
}

/// The name of one tool: the plain name when it fits in 64 characters and `is_taken` says it
/// is free, else its first 55 characters, `_` and the first 8 hex digits of SHA-256 of
/// `<server>\0<tool>`. A hashed name is not checked again.
pub(crate) fn tool_name(server: &str, tool: &str, is_taken: impl Fn(&str) -> bool) -> String {
    let name = plain_name(server, tool);
    if name.len() <= MAX_TOOL_NAME_LENGTH && !is_taken(&name) {
        return name;
    }
    hashed(name, server, tool)
}

fn hashed(mut name: String, server: &str, tool: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(server.as_bytes());
    hasher.update([0]);
    hasher.update(tool.as_bytes());
    let digest = hasher.finalize();
    // The plain name is ASCII, so any byte index is a character boundary.
    name.truncate(MAX_TOOL_NAME_LENGTH - HASH_DIGITS - 1);
    name.push('_');
    for byte in digest.iter().take(HASH_DIGITS / 2) {
        name.push_str(&format!("{byte:02x}"));
    }
    name
}

/// The names of one server's listed tools, in order. A plain name is taken when
/// `taken` says another tool owns it, when an earlier tool of the list got it, or when two
/// different tool names of the list sanitize to it; a name listed twice counts once, so its
/// second listing is hashed.
pub(crate) fn assign_names<'a>(
    server: &str,
    tools: impl IntoIterator<Item = &'a str> + Clone,
    taken: impl Fn(&str) -> bool,
) -> Vec<String> {
    // How many different tool names sanitize to each plain name.
    let mut seen = HashSet::new();
    let mut sharing: HashMap<String, usize> = HashMap::new();
    for tool in tools.clone() {
        if seen.insert(tool) {
            *sharing.entry(plain_name(server, tool)).or_default() += 1;
        }
    }
    let mut assigned: HashSet<String> = HashSet::new();
    let mut names = Vec::new();
    for tool in tools {
        let name = tool_name(server, tool, |candidate| {
            taken(candidate)
                || assigned.contains(candidate)
                || sharing.get(candidate).is_some_and(|&n| n > 1)
        });
        assigned.insert(name.clone());
        names.push(name);
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitized_per_utf16_code_unit() {
        assert_eq!(
            plain_name("my-server", "files.read"),
            "mcp__my_server__files_read"
        );
        assert_eq!(plain_name("s", "a\u{1F600}b"), "mcp__s__a__b");
        assert_eq!(plain_name("s", "é"), "mcp__s___");
    }

    #[test]
    fn long_and_taken_names_are_hashed() {
        let long = "t".repeat(60);
        let name = tool_name("s", &long, |_| false);
        assert_eq!(name.len(), 64);
        assert_eq!(&name[..56], &format!("{}_", &plain_name("s", &long)[..55]));
        assert_eq!(tool_name("s", "x", |_| false), "mcp__s__x");
        assert_ne!(tool_name("s", "x", |_| true), "mcp__s__x");
    }

    #[test]
    fn collisions_hash_every_party_and_repeats() {
        let names = assign_names("kv", ["get-value", "get_value"], |_| false);
        assert!(
            names
                .iter()
                .all(|n| n.len() == 64 || n.starts_with("mcp__kv__get_value_"))
        );
        assert_ne!(names[0], names[1]);
        let twice = assign_names("f", ["status", "status"], |_| false);
        assert_eq!(twice[0], "mcp__f__status");
        assert_ne!(twice[1], "mcp__f__status");
    }
}
