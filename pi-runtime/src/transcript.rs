//! The transcript's tool state: which tools its system messages declare, how a change of
//! the executable tools becomes a system message, and how a transcript with system messages
//! is folded or split for a wire API.
//!
//! A transcript declares tools the way pi 1.6 does: each [`SystemMessage`] may remove tools
//! (`toolsRemoved`) and add or redefine tools (`toolsAdded`), and replaying them in order
//! gives the tools the model was told about ([`current_tools`]). Before every request the
//! agent compares that with the tools it can execute and records the difference in the
//! transcript ([`declare_tool_changes`]), so a saved transcript always replays to exactly the
//! tools of its last request.
//!
//! ```
//! use pi_runtime::message::{Message, SystemMessage, UserMessage};
//! use pi_runtime::tool::Tool;
//! use pi_runtime::transcript::{current_tools, declare_tool_changes};
//! use serde_json::json;
//!
//! let read = Tool::new("read", "Read a file", json!({"type": "object", "properties": {}}));
//! let grep = Tool::new("grep", "Search files", json!({"type": "object", "properties": {}}));
//!
//! // The conversation so far declared `read`; the agent can now also execute `grep`.
//! let committed: Vec<Message> =
//!     vec![SystemMessage::text("You are helpful.").with_tools_added(vec![read.clone()]).into()];
//! let pending = vec![Message::from(UserMessage::text("find TODOs"))];
//! let declared = declare_tool_changes(&committed, pending, &[read, grep]);
//!
//! // A system message adding `grep` goes before the user's message.
//! assert_eq!(declared.len(), 2);
//! let update = declared[0].as_system().unwrap();
//! assert_eq!(update.added()[0].name, "grep");
//! let all: Vec<Message> = committed.into_iter().chain(declared).collect();
//! let names: Vec<String> = current_tools(&all).into_iter().map(|t| t.name).collect();
//! assert_eq!(names, ["read", "grep"]);
//! ```

use std::sync::Arc;

use indexmap::IndexMap;

use crate::declaration::Tool;
use crate::message::{Message, SystemMessage, ToolRef, UserContent};
use crate::stream::Context;

/// The tools declared by replaying `messages`' system messages in order: each message first
/// removes its `toolsRemoved`, then puts its `toolsAdded` (a declared name keeps its place
/// and takes the new definition; a name added after its removal goes to the end).
pub fn current_tools<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Vec<Tool> {
    replay(messages).into_values().cloned().collect()
}

fn replay<'a>(messages: impl IntoIterator<Item = &'a Message>) -> IndexMap<&'a str, &'a Tool> {
    let mut tools = IndexMap::new();
    replay_into(&mut tools, messages);
    tools
}

/// Replay `messages` onto `tools`; the messages may outlive the map's borrow.
fn replay_into<'m, 'a: 'm>(
    tools: &mut IndexMap<&'m str, &'m Tool>,
    messages: impl IntoIterator<Item = &'a Message>,
) {
    for system in messages.into_iter().filter_map(Message::as_system) {
        for removed in system.removed() {
            tools.shift_remove(removed.name.as_str());
        }
        for added in system.added() {
            tools.insert(added.name.as_str(), added);
        }
    }
}

/// What changed between two tool states.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ToolChanges {
    /// Tools that are new or declare another interface, in the order of the new state.
    pub added: Vec<Tool>,
    /// Tools that are gone or declare another interface, in the order of the old state.
    pub removed: Vec<ToolRef>,
}

impl ToolChanges {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty()
    }
}

/// The difference from `previous` to `current`. A changed definition (see
/// [`Tool::declares_same`]) is a removal plus an addition of the same name.
pub fn tool_changes(previous: &[Tool], current: &[Tool]) -> ToolChanges {
    let previous = previous
        .iter()
        .map(|tool| (tool.name.as_str(), tool))
        .collect();
    changes_from(&previous, current)
}

/// [`tool_changes`] from a replayed state, which borrows its tools from the transcript.
fn changes_from(previous: &IndexMap<&str, &Tool>, current: &[Tool]) -> ToolChanges {
    let now: IndexMap<&str, &Tool> = current
        .iter()
        .map(|tool| (tool.name.as_str(), tool))
        .collect();
    let same = |tool: &Tool, other: Option<&&Tool>| other.is_some_and(|o| o.declares_same(tool));
    ToolChanges {
        added: current
            .iter()
            .filter(|tool| !same(tool, previous.get(tool.name.as_str())))
            .cloned()
            .collect(),
        removed: previous
            .values()
            .filter(|tool| !same(tool, now.get(tool.name.as_str())))
            .map(|tool| ToolRef {
                name: tool.name.clone(),
            })
            .collect(),
    }
}

/// Declares the `executable` tools before a request, as pi's agent loop does: `pending` are
/// the messages about to be added to the `committed` transcript.
///
/// - When `pending` holds a system message, the last one carries the difference between
///   what the transcript declares and `executable` (its own tool fields are intent and are
///   replaced). It comes back untouched when there is no difference and it declares nothing.
/// - Otherwise a difference becomes a new system message with empty text, stamped now,
///   before the first pending message that is not a system message.
///
/// Replaying `committed` followed by the result declares exactly `executable`.
pub fn declare_tool_changes<'a>(
    committed: impl IntoIterator<Item = &'a Message>,
    pending: Vec<Message>,
    executable: &[Tool],
) -> Vec<Message> {
    declare_after_opening(&[], committed, pending, executable)
}

/// [`declare_tool_changes`] for a transcript whose leading system message, which declares
/// `opening`, is kept apart from `committed` (as an agent's conversation keeps it): the
/// replay starts from `opening` without building that message.
pub(crate) fn declare_after_opening<'a>(
    opening: &[Tool],
    committed: impl IntoIterator<Item = &'a Message>,
    mut pending: Vec<Message>,
    executable: &[Tool],
) -> Vec<Message> {
    let last_system = pending
        .iter()
        .rposition(|m| matches!(m, Message::System(_)));
    // The last pending system message's own tool fields are intent, not state: the replay
    // leaves them out (the rest of that message declares no tool).
    let changes = {
        let others = pending
            .iter()
            .enumerate()
            .filter(|(index, _)| Some(*index) != last_system)
            .map(|(_, message)| message);
        let mut declared: IndexMap<&str, &Tool> = opening
            .iter()
            .map(|tool| (tool.name.as_str(), tool))
            .collect();
        replay_into(&mut declared, committed);
        replay_into(&mut declared, others);
        changes_from(&declared, executable)
    };
    if let Some(index) = last_system {
        if let Message::System(intent) = &pending[index] {
            if changes.is_empty() && !intent.changes_tools() {
                return pending;
            }
            let stripped = SystemMessage {
                tools_added: None,
                tools_removed: None,
                ..SystemMessage::clone(intent)
            };
            pending[index] = with_changes(stripped, changes).into();
        }
    } else if !changes.is_empty() {
        let update = with_changes(SystemMessage::default(), changes);
        let at = pending
            .iter()
            .position(|m| !matches!(m, Message::System(_)))
            .unwrap_or(pending.len());
        pending.insert(at, update.into());
    }
    pending
}

fn with_changes(message: SystemMessage, changes: ToolChanges) -> SystemMessage {
    SystemMessage {
        tools_added: (!changes.added.is_empty()).then_some(changes.added),
        tools_removed: (!changes.removed.is_empty()).then_some(changes.removed),
        ..message
    }
}

/// The leading system message of a request for `system_prompt` and `tools`, as pi's
/// `normalizeContext` builds it (timestamp 0); `None` when both are empty.
pub fn leading_message(system_prompt: &str, tools: &[Tool]) -> Option<SystemMessage> {
    if system_prompt.is_empty() && tools.is_empty() {
        return None;
    }
    Some(SystemMessage {
        content: UserContent::Text(system_prompt.to_owned()),
        sections: None,
        tools_added: (!tools.is_empty()).then(|| tools.to_vec()),
        tools_removed: None,
        timestamp: 0,
    })
}

// The transcript's rules read a `Context`; `stream` only defines it.
impl Context {
    /// The tools this request declares: `tools`, changed by the system messages of
    /// `messages` in order (see [`transcript`](crate::transcript)).
    pub fn current_tools(&self) -> Vec<Tool> {
        let leading = leading_message("", &self.tools).map(Message::from);
        current_tools(leading.iter().chain(&self.messages))
    }
}

/// A request's whole transcript: the context's system prompt and tools as the leading system
/// message, then its messages.
pub fn normalize(context: &Context) -> Vec<Message> {
    let leading = leading_message(&context.system_prompt, &context.tools);
    leading
        .map(Message::from)
        .into_iter()
        .chain(context.messages.iter().cloned())
        .collect()
}

/// The transcript a wire API converts: [`normalize`]d, then [`fold_system_messages`]ed when
/// the model takes no system message after the first (pi's `resolveTranscript`).
pub fn resolve(context: &Context, mid_conversation: bool) -> Vec<Message> {
    let messages = normalize(context);
    // A lone leading system message folds into itself: the copy of its tools is skipped.
    if mid_conversation || !has_later_system_messages(&messages) {
        messages
    } else {
        fold_system_messages(&messages)
    }
}

/// The leading system message: the first message, when it is a system message. APIs send
/// it as the system prompt ([`render_leading`]) and every later one in place
/// ([`render_update`]).
pub fn leading(messages: &[Message]) -> Option<&SystemMessage> {
    messages.first().and_then(Message::as_system)
}

/// Every tool the system messages ever declared, removed ones included, in the order of
/// first declaration with the latest definition (pi's `getDeclaredTools`): what a replayed
/// call may name.
pub fn declared_tools(messages: &[Message]) -> Vec<&Tool> {
    let mut tools = IndexMap::new();
    for system in messages.iter().filter_map(Message::as_system) {
        for added in system.added() {
            tools.insert(added.name.as_str(), added);
        }
    }
    tools.into_values().collect()
}

/// Whether `messages` has a system message after its first message: only then does a wire
/// API have tool changes or updates to carry.
pub fn has_later_system_messages(messages: &[Message]) -> bool {
    messages
        .iter()
        .skip(1)
        .any(|m| matches!(m, Message::System(_)))
}

/// Every system message replayed into one: the texts that are not empty joined with a blank
/// line, the sections patched in order (a value replaces a section in place or appends it,
/// `None` deletes it), the first message's timestamp, and the current tools. `None` when
/// there is no system message.
pub fn current_system_message(messages: &[Message]) -> Option<SystemMessage> {
    let mut systems = messages.iter().filter_map(Message::as_system).peekable();
    let timestamp = systems.peek()?.timestamp;
    let mut texts = Vec::new();
    let mut sections: IndexMap<String, Option<String>> = IndexMap::new();
    for system in systems {
        let text = system.text_content();
        if !text.is_empty() {
            texts.push(text);
        }
        for (name, value) in system.sections.iter().flatten() {
            match value {
                Some(value) => {
                    sections.insert(name.clone(), Some(value.clone()));
                }
                None => {
                    sections.shift_remove(name);
                }
            }
        }
    }
    let tools = current_tools(messages);
    Some(SystemMessage {
        content: UserContent::Text(texts.join("\n\n")),
        sections: (!sections.is_empty()).then_some(sections),
        tools_added: (!tools.is_empty()).then_some(tools),
        tools_removed: None,
        timestamp,
    })
}

/// The transcript for an API without mid-conversation system messages: one leading system
/// message holding the replayed prompt and tools ([`current_system_message`]), then the
/// other messages in their order.
pub fn fold_system_messages(messages: &[Message]) -> Vec<Message> {
    let head = current_system_message(messages).map(|m| Message::System(Arc::new(m)));
    head.into_iter()
        .chain(
            messages
                .iter()
                .filter(|m| !matches!(m, Message::System(_)))
                .cloned(),
        )
        .collect()
}

/// The leading system message as prompt text: its text, then each section's value, the
/// parts that are not empty joined with a blank line.
pub fn render_leading(message: &SystemMessage) -> String {
    let text = message.text_content();
    let sections = message.sections.iter().flatten();
    std::iter::once(text.as_str())
        .chain(sections.filter_map(|(_, value)| value.as_deref()))
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A later system message as text the model reads in place: its text, then each section
/// as `Updated system prompt section "<name>":` with its value, or `Removed system prompt
/// section "<name>".`, joined with a blank line.
pub fn render_update(message: &SystemMessage) -> String {
    let text = message.text_content();
    let mut parts = Vec::new();
    if !text.is_empty() {
        parts.push(text);
    }
    for (name, value) in message.sections.iter().flatten() {
        parts.push(match value {
            Some(value) => format!("Updated system prompt section \"{name}\":\n\n{value}"),
            None => format!("Removed system prompt section \"{name}\"."),
        });
    }
    parts.join("\n\n")
}

/// How a wire API can carry tool changes in the middle of a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolChangeSupport {
    /// Not at all: the request declares the current tools.
    None,
    /// Additions only: removals and redefinitions move the request's tool list.
    Additions,
    /// Additions and removals, each system message declaring its own.
    Changes,
}

/// The request's top-level tools, and how many of the transcript's system messages they
/// fold (the messages from that index on carry their own changes).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RequestTools {
    /// The top-level tool list.
    pub tools: Vec<Tool>,
    /// The number of leading system messages whose tools are in `tools`.
    pub folded: usize,
}

/// Splits the transcript's tool declarations between the request's top-level list and the
/// system messages that anchor changes in place:
/// - [`None`](ToolChangeSupport::None): every tool is top-level;
/// - [`Changes`](ToolChangeSupport::Changes): nothing is top-level;
/// - [`Additions`](ToolChangeSupport::Additions): the top level is the state after the last
///   removal or redeclaration (an earlier declaration of the name counts, even if it was
///   removed since), and later system messages anchor their additions.
pub fn request_tools(messages: &[Message], support: ToolChangeSupport) -> RequestTools {
    let systems: Vec<&Message> = messages
        .iter()
        .filter(|m| matches!(m, Message::System(_)))
        .collect();
    match support {
        ToolChangeSupport::None => RequestTools {
            tools: current_tools(systems.iter().copied()),
            folded: systems.len(),
        },
        ToolChangeSupport::Changes => RequestTools {
            tools: Vec::new(),
            folded: 0,
        },
        ToolChangeSupport::Additions => {
            let leading = usize::from(matches!(messages.first(), Some(Message::System(_))));
            let folded = leading.max(last_non_additive(&systems).map_or(0, |index| index + 1));
            RequestTools {
                tools: current_tools(systems[..folded].iter().copied()),
                folded,
            }
        }
    }
}

/// The index (among system messages) of the last one that removes a tool or declares a
/// name declared before.
fn last_non_additive(systems: &[&Message]) -> Option<usize> {
    let mut declared = std::collections::HashSet::new();
    let mut last = None;
    for (index, system) in systems.iter().filter_map(|m| m.as_system()).enumerate() {
        if !system.removed().is_empty() {
            last = Some(index);
        }
        for tool in system.added() {
            if !declared.insert(tool.name.as_str()) {
                last = Some(index);
            }
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::message::UserMessage;

    fn tool(name: &str) -> Tool {
        Tool::new(name, "", json!({"type": "object", "properties": {}}))
    }

    fn system(added: &[&str], removed: &[&str]) -> Message {
        SystemMessage {
            tools_added: (!added.is_empty()).then(|| added.iter().map(|n| tool(n)).collect()),
            tools_removed: (!removed.is_empty()).then(|| {
                removed
                    .iter()
                    .map(|n| ToolRef {
                        name: (*n).to_owned(),
                    })
                    .collect()
            }),
            ..SystemMessage::text("")
        }
        .into()
    }

    fn names(tools: &[Tool]) -> Vec<&str> {
        tools.iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn replay_keeps_places_and_appends_readded_names() {
        let messages = [
            system(&["read", "edit", "grep"], &[]),
            system(&["read"], &["edit"]),
            system(&["edit"], &[]),
        ];
        assert_eq!(names(&current_tools(&messages)), ["read", "grep", "edit"]);
    }

    #[test]
    fn a_redefinition_is_a_removal_and_an_addition() {
        let before = [tool("read"), tool("grep")];
        let mut grep = tool("grep");
        grep.description = "new".into();
        let changes = tool_changes(&before, &[tool("read"), grep]);
        assert_eq!(names(&changes.added), ["grep"]);
        assert_eq!(
            changes.removed,
            [ToolRef {
                name: "grep".into()
            }]
        );
    }

    #[test]
    fn schema_key_order_counts() {
        let a = Tool::new("t", "", json!({"type": "object", "properties": {}}));
        let b = Tool::new("t", "", json!({"properties": {}, "type": "object"}));
        assert!(!a.declares_same(&b));
        assert!(a.declares_same(&a.clone()));
    }

    #[test]
    fn declaration_goes_before_the_first_non_system_message() {
        let pending = vec![UserMessage::text("hi").into()];
        let out = declare_tool_changes(&[], pending, &[tool("read")]);
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[0].as_system().map(|s| names(s.added())),
            Some(vec!["read"])
        );
        assert!(declare_tool_changes(&[], vec![], &[]).is_empty());
    }

    #[test]
    fn a_pending_system_message_is_rewritten_from_the_real_difference() {
        let committed = [system(&["read"], &[])];
        let pending = vec![system(&["bogus"], &["read"])];
        let out = declare_tool_changes(&committed, pending, &[tool("read"), tool("grep")]);
        let update = out[0].as_system().expect("system");
        assert_eq!(names(update.added()), ["grep"]);
        assert!(update.tools_removed.is_none());
    }

    #[test]
    fn additions_fold_up_to_the_last_removal() {
        let messages = [
            system(&["read"], &[]),
            system(&["grep"], &[]),
            system(&[], &["read"]),
            system(&["web"], &[]),
        ];
        let split = request_tools(&messages, ToolChangeSupport::Additions);
        assert_eq!(split.folded, 3);
        assert_eq!(names(&split.tools), ["grep"]);
        assert_eq!(
            request_tools(&messages, ToolChangeSupport::Changes).folded,
            0
        );
        let none = request_tools(&messages, ToolChangeSupport::None);
        assert_eq!((none.folded, names(&none.tools)), (4, vec!["grep", "web"]));
    }

    #[test]
    fn folding_joins_texts_and_patches_sections() {
        let mut first = SystemMessage::text("base");
        first.sections = Some(IndexMap::from([
            ("env".to_owned(), Some("cwd".to_owned())),
            ("old".to_owned(), Some("x".to_owned())),
        ]));
        let mut later = SystemMessage::text("more");
        later.sections = Some(IndexMap::from([
            ("old".to_owned(), None),
            ("env".to_owned(), Some("cwd2".to_owned())),
        ]));
        let folded = fold_system_messages(&[
            first.into(),
            UserMessage::text("u").into(),
            later.clone().into(),
        ]);
        let head = folded[0].as_system().expect("head");
        assert_eq!(render_leading(head), "base\n\nmore\n\ncwd2");
        assert_eq!(folded.len(), 2);
        assert_eq!(
            render_update(&later),
            "more\n\nRemoved system prompt section \"old\".\n\nUpdated system prompt section \"env\":\n\ncwd2"
        );
    }
}
