//! Transcript system messages on the Responses API: instructions in place, and tool changes
//! as `additional_tools` items or as client tool-search pairs.

use std::borrow::Cow;
use std::collections::HashSet;

use indexmap::IndexSet;

use super::convert_tools;
use super::wire::{
    AdditionalTools, InputItem, ToolSearchArguments, ToolSearchCall, ToolSearchOutput,
};
use crate::message::SystemMessage;
use crate::provider::{Compat, Model, ids};
use crate::transcript::{self, ToolChangeSupport};

/// Precedes every `additional_tools` item after the first: without it models read the
/// latest item as the whole tool set once a removal was announced (Codex precedes its
/// incremental batches with the same guidance).
const INCREMENTAL_NOTICE: &str = "This is an incremental tools update. Previously declared tools remain available unless explicitly marked unavailable. A tool declared again here is available again, and its latest definition replaces the earlier one.";

/// How this model's requests carry tool changes (pi's `getResponsesToolSupport`).
/// `additional_tools` items add tools and replace same-name definitions of earlier items,
/// but cannot replace a top-level tool or remove one: every tool is declared in items then,
/// the first at the head of the input, and removals are announced in text. Tool search can
/// only add.
pub(super) fn tool_support(compat: &Compat) -> ToolChangeSupport {
    let mid_conversation = compat.supports_mid_convo_system_messages == Some(true);
    if mid_conversation && compat.supports_additional_tools == Some(true) {
        ToolChangeSupport::Changes
    } else if compat.supports_tool_search == Some(true) {
        ToolChangeSupport::Additions
    } else {
        ToolChangeSupport::None
    }
}

/// Converts a request's system messages, in transcript order.
pub(super) struct SystemMessages<'a> {
    support: ToolChangeSupport,
    /// The system messages before this index have their tools in the top-level list.
    folded: usize,
    /// How many system messages were converted.
    seen: usize,
    /// `developer` for a reasoning model that takes it, else `system`.
    role: &'static str,
    supports_strict: bool,
    /// Whether an `additional_tools` item was sent.
    declared_additional_tools: bool,
    /// Tools announced as removed and not declared again since, in removal order.
    unavailable: IndexSet<&'a str>,
}

impl<'a> SystemMessages<'a> {
    /// `folded` is the fold point of the request's tools ([`transcript::request_tools`]).
    pub(super) fn new(model: &Model, support: ToolChangeSupport, folded: usize) -> Self {
        let developer = model.reasoning && model.compat.supports_developer_role != Some(false);
        SystemMessages {
            support,
            folded,
            seen: 0,
            role: if developer { "developer" } else { "system" },
            supports_strict: model.compat.supports_strict_mode == Some(true),
            declared_additional_tools: false,
            unavailable: IndexSet::new(),
        }
    }

    /// Push the items of the next system message: its additions when it anchors its
    /// changes (past the fold point), then its text with the removals it announces.
    /// `leading` is true for the transcript's first message; `index` is the `n` of
    /// `msg_pi_<n>` at this message.
    pub(super) fn push(
        &mut self,
        message: &'a SystemMessage,
        leading: bool,
        index: usize,
        input: &mut Vec<InputItem<'a>>,
    ) -> Result<(), String> {
        let anchored = self.seen >= self.folded;
        self.seen += 1;
        if anchored {
            self.push_additions(message, index, input)?;
        }
        let mut parts = vec![if leading {
            transcript::render_leading(message)
        } else {
            transcript::render_update(message)
        }];
        if anchored {
            // A redefinition is a removal plus an addition of one name: only true removals
            // are announced.
            let added: HashSet<&str> = message.added().iter().map(|t| t.name.as_str()).collect();
            let removed: Vec<&'a str> = message
                .removed()
                .iter()
                .map(|tool| tool.name.as_str())
                .filter(|name| !added.contains(name))
                .collect();
            if !removed.is_empty() {
                parts.push(removal_notice(&removed));
            }
            // After this message's additions, whose notice comes before this announcement.
            self.unavailable.extend(removed);
        }
        parts.retain(|part| !part.is_empty());
        if !parts.is_empty() {
            input.push(InputItem::Instructions {
                role: self.role,
                content: Cow::Owned(parts.join("\n\n")),
            });
        }
        Ok(())
    }

    fn push_additions(
        &mut self,
        message: &'a SystemMessage,
        index: usize,
        input: &mut Vec<InputItem<'a>>,
    ) -> Result<(), String> {
        let tools = message.added();
        for tool in tools {
            self.unavailable.shift_remove(tool.name.as_str());
        }
        if tools.is_empty() {
            return Ok(());
        }
        match self.support {
            ToolChangeSupport::Changes => {
                if self.declared_additional_tools {
                    input.push(InputItem::Instructions {
                        role: self.role,
                        content: Cow::Owned(self.incremental_notice()),
                    });
                }
                self.declared_additional_tools = true;
                input.push(InputItem::AdditionalTools(AdditionalTools {
                    kind: "additional_tools",
                    role: "developer",
                    tools: convert_tools(tools, self.supports_strict, false)?,
                }));
            }
            ToolChangeSupport::Additions => {
                let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
                // Stable across requests: the message's place and what it loads.
                let seed = format!("system:{index}:{}", names.join(","));
                let call_id = format!("pi_tool_load_{}", ids::full_hash(&seed));
                input.push(InputItem::ToolSearchCall(ToolSearchCall {
                    kind: "tool_search_call",
                    call_id: call_id.clone(),
                    execution: "client",
                    status: "completed",
                    arguments: ToolSearchArguments {
                        query: names.join(" "),
                        limit: names.len(),
                    },
                }));
                input.push(InputItem::ToolSearchOutput(ToolSearchOutput {
                    kind: "tool_search_output",
                    call_id,
                    execution: "client",
                    status: "completed",
                    tools: convert_tools(tools, self.supports_strict, true)?,
                }));
            }
            ToolChangeSupport::None => {}
        }
        Ok(())
    }

    /// Restating the tools still unavailable keeps smaller models from calling them again
    /// after later loads (pi verified this with gpt-5.6-luna).
    fn incremental_notice(&self) -> String {
        if self.unavailable.is_empty() {
            return INCREMENTAL_NOTICE.to_owned();
        }
        let names: Vec<&str> = self.unavailable.iter().copied().collect();
        format!(
            "{INCREMENTAL_NOTICE}\nStill unavailable: {}.",
            names.join(", ")
        )
    }
}

fn removal_notice(names: &[&str]) -> String {
    let lines: Vec<String> = names.iter().map(|name| format!("- {name}")).collect();
    format!(
        "The following tools are no longer available. Do not call them:\n{}",
        lines.join("\n")
    )
}
