//! The `system_prompt_tools` op: the system prompt's tool section for a list of
//! `{name, promptSnippet?, promptGuidelines?}` plus optional prompt-level guidelines and
//! hidden tools (which count as not active).

use pi_runtime::prompt::ToolSection;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::protocol::{Answer, Prepared};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    tools: Vec<PromptTool>,
    #[serde(default)]
    prompt_guidelines: Vec<String>,
    #[serde(default)]
    hidden_tools: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptTool {
    name: String,
    #[serde(default)]
    prompt_snippet: Option<String>,
    #[serde(default)]
    prompt_guidelines: Vec<String>,
}

pub(crate) fn prepare(request: &Map<String, Value>) -> Result<Prepared, String> {
    let request = Request::deserialize(Value::Object(request.clone()))
        .map_err(|error| format!("bad request: {error}"))?;
    Ok(Box::new(move || {
        let mut section = ToolSection::new();
        for tool in &request.tools {
            if request.hidden_tools.contains(&tool.name) {
                continue;
            }
            section.tool(
                &tool.name,
                tool.prompt_snippet.as_deref(),
                &tool.prompt_guidelines,
            );
        }
        for guideline in &request.prompt_guidelines {
            section.guideline(guideline);
        }
        Answer::Ok(Value::String(section.to_string()))
    }))
}
