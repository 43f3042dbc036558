//! The system prompt's tool section (SPEC §8) built from tool definitions.

use std::sync::Arc;

use pi_runtime::prompt::{ToolSection, tool_section};
use pi_runtime::tools::{Bash, Edit, Read, WorkingDir, Write};
use pi_runtime::{FnTool, ToolDefinition, ToolResult};
use serde_json::json;

fn fn_tool(name: &str) -> FnTool {
    FnTool::new(name, "test tool", json!({"type": "object"}), |_, _| async {
        Ok(ToolResult::text("done"))
    })
}

#[test]
fn no_tools() {
    assert_eq!(
        tool_section(&[], &[]),
        "Available tools:\n(none)\n\nAdditional tools may be available.\n\nGuidelines:\n- Be concise in your responses\n- Show file paths clearly when working with files"
    );
}

#[test]
fn unlisted_tool_still_contributes_guidelines() {
    let tools: Vec<Arc<dyn ToolDefinition>> = vec![
        Arc::new(
            fn_tool("read")
                .with_snippet("Read file contents")
                .with_guidelines(["Use read to examine files instead of cat or sed."]),
        ),
        Arc::new(fn_tool("mytool").with_guidelines([" dup "])),
    ];
    assert_eq!(
        tool_section(&tools, &["dup".to_owned()]),
        "Available tools:\n- read: Read file contents\n\nAdditional tools may be available.\n\nGuidelines:\n- Use read to examine files instead of cat or sed.\n- dup\n- Be concise in your responses\n- Show file paths clearly when working with files"
    );
}

#[test]
fn built_ins_in_default_order() {
    let cwd = WorkingDir::from(std::env::temp_dir());
    let tools: Vec<Arc<dyn ToolDefinition>> = vec![
        Arc::new(Read::new(cwd.clone())),
        Arc::new(Bash::new(cwd.clone().into())),
        Arc::new(Edit::new(cwd.clone())),
        Arc::new(Write::new(cwd)),
    ];
    assert_eq!(
        tool_section(&tools, &[]),
        "Available tools:
- read: Read file contents
- bash: Execute bash commands (ls, grep, find, etc.)
- edit: Edit files via targeted text replacements
- write: Create or overwrite files

Additional tools may be available.

Guidelines:
- Use bash for file operations like ls, rg, find
- Use read to examine files instead of cat or sed.
- Use edit for targeted changes. Batch changes to one file in a single call.
- Each edits[].oldText must exactly and uniquely match the original file. Keep matches short and non-overlapping; merge nearby changes without including large unchanged regions.
- Use write only for new files or complete rewrites.
- Be concise in your responses
- Show file paths clearly when working with files"
    );
}

#[test]
fn shell_rule_variants() {
    let first_rule = |names: &[&str]| {
        let mut section = ToolSection::new();
        for name in names {
            section.tool(name, None, [""; 0]);
        }
        let text = section.to_string();
        let guidelines = text
            .split("Guidelines:\n")
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        guidelines.lines().next().unwrap_or_default().to_owned()
    };
    assert_eq!(
        first_rule(&["bash"]),
        "- Use bash for file operations like ls, rg, find"
    );
    assert_eq!(
        first_rule(&["powershell"]),
        "- Use PowerShell for file operations like listing, searching, and finding files"
    );
    assert_eq!(
        first_rule(&["powershell", "bash"]),
        "- Use bash or PowerShell for file operations like listing, searching, and finding files"
    );
    assert_eq!(
        first_rule(&["bash", "ls"]),
        "- Be concise in your responses"
    );
    assert_eq!(
        first_rule(&["grep", "bash"]),
        "- Be concise in your responses"
    );
}

#[test]
fn snippets_collapse_and_blank_ones_are_not_listed() {
    let mut section = ToolSection::new();
    section.tool("x", Some("   \n  "), [""; 0]).tool(
        "search",
        Some("  Search the web\n  for pages\r\n\tand   summarize  "),
        [""; 0],
    );
    assert!(section.to_string().starts_with(
        "Available tools:\n- search: Search the web for pages and summarize\n\nAdditional"
    ));
}

#[test]
fn closing_rules_are_not_repeated() {
    let mut section = ToolSection::new();
    section
        .tool(
            "a",
            Some("A"),
            [
                "  Same rule  ",
                "Same rule",
                "",
                "Be concise in your responses",
            ],
        )
        .guideline("Same rule")
        .guideline("   ");
    assert!(section.to_string().ends_with(
        "Guidelines:\n- Same rule\n- Be concise in your responses\n- Show file paths clearly when working with files"
    ));
}

/// An agent's system prompt gets the plain section unless it asks for pi's coding-agent one.
#[tokio::test]
async fn an_agent_names_its_tool_section_style() {
    use pi_runtime::agent::Agent;
    use pi_runtime::prompt::ToolSectionStyle;
    use pi_runtime::provider::faux::{FauxModel, FauxResponse};

    let prompt_of = |style: Option<ToolSectionStyle>| async move {
        let model = FauxModel::new().respond(FauxResponse::text("ok"));
        let requests = model.clone();
        let mut builder = Agent::builder()
            .model(model)
            .system_prompt("Be helpful.")
            .tools(fn_tool("bash").with_snippet("Run a command"));
        if let Some(style) = style {
            builder = builder.tool_section(style);
        }
        builder.build().unwrap().prompt("hi").await.unwrap();
        requests.requests()[0].system_prompt.clone()
    };
    assert_eq!(
        prompt_of(None).await,
        "Be helpful.\n\nAvailable tools:\n- bash: Run a command"
    );
    assert_eq!(
        prompt_of(Some(ToolSectionStyle::CodingAgent)).await,
        "Be helpful.\n\nAvailable tools:\n- bash: Run a command\n\nAdditional tools may be available.\n\n\
         Guidelines:\n- Use bash for file operations like ls, rg, find\n- Be concise in your responses\n\
         - Show file paths clearly when working with files"
    );
    assert_eq!(prompt_of(Some(ToolSectionStyle::None)).await, "Be helpful.");
}
