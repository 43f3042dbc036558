//! The system prompt's tool section: one line per listed tool, then the guidelines.
//!
//! Full schemas never go into the prompt; they travel in the provider's `tools` field. The
//! section is rebuilt before each request from the active tools, so it is cheap plain text.

use std::fmt;
use std::sync::Arc;

use indexmap::IndexSet;

use crate::js::{is_js_space, js_trim};
use crate::tool::ToolDefinition;

/// `bash` without a search tool: the model is told to use the shell for file operations.
const BASH_RULE: &str = "Use bash for file operations like ls, rg, find";
const POWERSHELL_RULE: &str =
    "Use PowerShell for file operations like listing, searching, and finding files";
const BOTH_SHELLS_RULE: &str =
    "Use bash or PowerShell for file operations like listing, searching, and finding files";
/// Tools whose presence makes the shell rule unnecessary.
const SEARCH_TOOLS: [&str; 3] = ["grep", "find", "ls"];
/// Always last, unless an earlier source already gave them.
const CLOSING_RULES: [&str; 2] = [
    "Be concise in your responses",
    "Show file paths clearly when working with files",
];

/// Which tool section an agent's system prompt gets, after the prompt and a blank line.
///
/// ```
/// use pi_runtime::prompt::{ToolSection, ToolSectionStyle};
///
/// let mut section = ToolSection::new();
/// section.tool("add", Some("Add two numbers"), ["Show your work"]);
/// assert_eq!(
///     section.render(ToolSectionStyle::Plain),
///     "Available tools:\n- add: Add two numbers\n\nGuidelines:\n- Show your work"
/// );
/// assert_eq!(ToolSection::new().render(ToolSectionStyle::Plain), "");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ToolSectionStyle {
    /// No section: the system prompt exactly as given.
    None,
    /// The tools that have a snippet, one line each, then the tools' and the prompt's own
    /// guidelines; each part only when it has lines, so an agent without snippets or
    /// guidelines sends its prompt as given. The default.
    #[default]
    Plain,
    /// pi's coding-agent section, word for word: the tool lines (or `(none)`), then
    /// `Additional tools may be available.`, and guidelines that add a shell rule when
    /// `bash` or `powershell` is active without `grep`, `find` or `ls` ("Use bash for file
    /// operations like ls, rg, find"), then `Be concise in your responses` and
    /// `Show file paths clearly when working with files`. For coding agents.
    CodingAgent,
}

/// The `Available tools:` / `Guidelines:` section for the active tools, in activation order,
/// plus prompt-level guidelines. No trailing newline.
///
/// A tool is listed as `- <name>: <snippet>` only if it has a snippet (without one it is
/// still callable). The guidelines come in this order, each once: the shell rule (when
/// `bash` or `powershell` is active without `grep`, `find` or `ls`), each tool's, the
/// prompt-level ones, then `Be concise in your responses` and
/// `Show file paths clearly when working with files`.
///
/// ```
/// let text = pi_runtime::prompt::tool_section(&[], &[]);
/// assert_eq!(
///     text,
///     "Available tools:\n(none)\n\nAdditional tools may be available.\n\n\
///      Guidelines:\n- Be concise in your responses\n- Show file paths clearly when working with files"
/// );
/// ```
pub fn tool_section(tools: &[Arc<dyn ToolDefinition>], prompt_guidelines: &[String]) -> String {
    tool_section_in(ToolSectionStyle::CodingAgent, tools, prompt_guidelines)
}

/// The tool section in `style` for the active tools and prompt-level guidelines.
pub fn tool_section_in(
    style: ToolSectionStyle,
    tools: &[Arc<dyn ToolDefinition>],
    prompt_guidelines: &[String],
) -> String {
    let mut section = ToolSection::new();
    for tool in tools {
        section.tool(
            &tool.definition().name,
            tool.prompt_snippet().as_deref(),
            tool.prompt_guidelines(),
        );
    }
    for guideline in prompt_guidelines {
        section.guideline(guideline);
    }
    section.render(style)
}

/// A builder for the tool section when the tools are not [`ToolDefinition`]s: names,
/// snippets and guidelines as plain values. Add only the active tools; a hidden tool is
/// simply not added.
///
/// ```
/// use pi_runtime::prompt::ToolSection;
///
/// let mut section = ToolSection::new();
/// section
///     .tool("bash", Some("Run a shell\n  command"), ["Quote paths"])
///     .tool("helper", None, [" Quote paths "])
///     .guideline("Answer in English");
/// assert_eq!(
///     section.to_string(),
///     "Available tools:\n- bash: Run a shell command\n\nAdditional tools may be available.\n\n\
///      Guidelines:\n- Use bash for file operations like ls, rg, find\n- Quote paths\n\
///      - Answer in English\n- Be concise in your responses\n\
///      - Show file paths clearly when working with files"
/// );
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolSection {
    tools: Vec<Entry>,
    prompt_guidelines: Vec<String>,
}

#[derive(Debug, Clone)]
struct Entry {
    name: String,
    snippet: Option<String>,
    guidelines: Vec<String>,
}

impl ToolSection {
    /// An empty section: no tools, no prompt-level guidelines.
    pub fn new() -> Self {
        ToolSection::default()
    }

    /// Add an active tool. The snippet is collapsed to one line (an empty result means the
    /// tool is not listed); the guidelines are trimmed and empty ones dropped.
    pub fn tool<G>(&mut self, name: &str, snippet: Option<&str>, guidelines: G) -> &mut Self
    where
        G: IntoIterator,
        G::Item: AsRef<str>,
    {
        self.tools.push(Entry {
            name: name.to_owned(),
            snippet: snippet.map(one_line).filter(|line| !line.is_empty()),
            guidelines: guidelines
                .into_iter()
                .map(|g| js_trim(g.as_ref()).to_owned())
                .collect(),
        });
        self
    }

    /// Add a prompt-level guideline (after every tool's guidelines).
    pub fn guideline(&mut self, guideline: &str) -> &mut Self {
        self.prompt_guidelines.push(guideline.to_owned());
        self
    }

    /// The shell rule (the first guideline), if one applies.
    fn shell_rule(&self) -> Option<&'static str> {
        let active = |name: &str| self.tools.iter().any(|tool| tool.name == name);
        if SEARCH_TOOLS.iter().any(|name| active(name)) {
            return None;
        }
        match (active("bash"), active("powershell")) {
            (true, true) => Some(BOTH_SHELLS_RULE),
            (true, false) => Some(BASH_RULE),
            (false, true) => Some(POWERSHELL_RULE),
            (false, false) => None,
        }
    }

    /// Every guideline in output order, trimmed, de-duplicated globally (first kept).
    fn rules(&self) -> IndexSet<&str> {
        let tool_rules = self
            .tools
            .iter()
            .flat_map(|tool| tool.guidelines.iter().map(String::as_str));
        let prompt_rules = self.prompt_guidelines.iter().map(|g| js_trim(g));
        self.shell_rule()
            .into_iter()
            .chain(tool_rules)
            .chain(prompt_rules)
            .chain(CLOSING_RULES)
            .filter(|rule| !rule.is_empty())
            .collect()
    }
}

impl ToolSection {
    /// The section in `style`.
    pub fn render(&self, style: ToolSectionStyle) -> String {
        match style {
            ToolSectionStyle::None => String::new(),
            ToolSectionStyle::Plain => self.plain(),
            ToolSectionStyle::CodingAgent => self.to_string(),
        }
    }

    /// [`ToolSectionStyle::Plain`].
    fn plain(&self) -> String {
        let mut parts = Vec::new();
        let listed: Vec<String> = (self.tools.iter())
            .filter_map(|tool| Some(format!("- {}: {}", tool.name, tool.snippet.as_ref()?)))
            .collect();
        if !listed.is_empty() {
            parts.push(format!("Available tools:\n{}", listed.join("\n")));
        }
        let tool_rules =
            (self.tools.iter()).flat_map(|tool| tool.guidelines.iter().map(String::as_str));
        let prompt_rules = self.prompt_guidelines.iter().map(|g| js_trim(g));
        let rules: IndexSet<&str> = tool_rules
            .chain(prompt_rules)
            .filter(|rule| !rule.is_empty())
            .collect();
        if !rules.is_empty() {
            let lines: Vec<String> = rules.iter().map(|rule| format!("- {rule}")).collect();
            parts.push(format!("Guidelines:\n{}", lines.join("\n")));
        }
        parts.join("\n\n")
    }
}

/// pi's coding-agent section ([`ToolSectionStyle::CodingAgent`]).
impl fmt::Display for ToolSection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Available tools:\n")?;
        let mut listed = self
            .tools
            .iter()
            .filter_map(|tool| Some((&tool.name, tool.snippet.as_ref()?)))
            .peekable();
        if listed.peek().is_none() {
            f.write_str("(none)")?;
        }
        for (i, (name, snippet)) in listed.enumerate() {
            let sep = if i == 0 { "" } else { "\n" };
            write!(f, "{sep}- {name}: {snippet}")?;
        }
        f.write_str("\n\nAdditional tools may be available.\n\nGuidelines:")?;
        for rule in self.rules() {
            write!(f, "\n- {rule}")?;
        }
        Ok(())
    }
}

/// Runs of whitespace (line breaks included) become one space; the ends are trimmed.
fn one_line(snippet: &str) -> String {
    let mut line = String::with_capacity(snippet.len());
    for word in snippet.split(is_js_space).filter(|w| !w.is_empty()) {
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippet_collapses_js_whitespace_only() {
        assert_eq!(one_line("  a\r\n\n b\u{FEFF}c\t "), "a b c");
        // U+0085 is Unicode whitespace but not JavaScript's: it stays.
        assert_eq!(one_line("a\u{85}b"), "a\u{85}b");
        assert_eq!(one_line(" \n "), "");
    }
}
