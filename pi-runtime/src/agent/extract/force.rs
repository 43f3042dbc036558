//! Forcing the submit tool through the provider's `tool_choice`.
//!
//! The loop sends no `tool_choice` of its own; forcing sets the request plan's
//! [`ToolChoice::Tool`] before each request, and each wire API's request module writes it in
//! its own format.

use crate::agent::RequestPlan;
use crate::stream::ToolChoice;

/// Ask for `tool` if the request offers it and no earlier hook chose otherwise: a choice
/// naming a tool the request does not offer is an error on every provider.
pub(super) fn force_tool(plan: &mut RequestPlan, tool: &str) {
    let offered = plan
        .context
        .tools
        .iter()
        .any(|offered| offered.name == tool);
    if offered && plan.tool_choice.is_none() {
        plan.tool_choice = Some(ToolChoice::Tool(tool.to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::provider::faux::FauxModel;
    use crate::stream::{Context, ThinkingLevel};
    use crate::tool::Tool;

    fn plan(tools: &[&str]) -> RequestPlan {
        RequestPlan {
            context: Context {
                system_prompt: String::new(),
                messages: Vec::new(),
                tools: tools
                    .iter()
                    .map(|name| Tool::new(*name, "", json!({})))
                    .collect(),
            },
            model: Arc::new(FauxModel::new()),
            thinking_level: ThinkingLevel::Off,
            tool_choice: None,
            parallel_tool_calls: None,
            max_tool_calls: None,
        }
    }

    #[test]
    fn only_an_offered_tool_is_forced_and_a_hooks_choice_stays() {
        let mut offered = plan(&["submit"]);
        force_tool(&mut offered, "submit");
        assert_eq!(offered.tool_choice, Some(ToolChoice::Tool("submit".into())));

        let mut hidden = plan(&["other"]);
        force_tool(&mut hidden, "submit");
        assert_eq!(hidden.tool_choice, None);

        let mut chosen = plan(&["submit"]);
        chosen.tool_choice = Some(ToolChoice::Auto);
        force_tool(&mut chosen, "submit");
        assert_eq!(chosen.tool_choice, Some(ToolChoice::Auto));
    }
}
