//! The conversation: its transcript and state, its queues, and the settings its next
//! request uses.

use std::sync::Arc;

use crate::agent::error::AgentError;
use crate::agent::state::AgentState;
use crate::message::{Message, SystemMessage, UserContent};
use crate::stream::{LanguageModel, ThinkingLevel};

use super::Agent;

impl Agent {
    /// Queue a message for the next drain point of the current run (after the current
    /// turn's tools ran).
    pub fn steer(&self, message: impl Into<Message>) {
        self.shared
            .conversation()
            .steering
            .push_back(message.into());
    }

    /// Queue a message for when the agent would otherwise stop.
    pub fn follow_up(&self, message: impl Into<Message>) {
        self.shared
            .conversation()
            .follow_ups
            .push_back(message.into());
    }

    /// A snapshot of the state.
    pub fn state(&self) -> AgentState {
        let state = self.shared.conversation();
        let mut view = state.view.clone();
        view.is_streaming = state.slot.is_busy();
        view
    }

    /// The whole transcript as pi 1.6 keeps it: a leading system message with the agent's
    /// system prompt and the tools the conversation declared first, then
    /// [`messages`](Self::messages). Replaying its system messages
    /// ([`transcript::current_tools`](crate::transcript::current_tools)) gives the tools of
    /// the last request; saved and given back to [`set_messages`](Self::set_messages) or
    /// [`AgentBuilder::messages`](crate::agent::AgentBuilder::messages), it resumes the conversation
    /// with the same declared tools.
    pub fn transcript(&self) -> Vec<Message> {
        let config = self.shared.config();
        let state = self.shared.conversation();
        let opening = match &state.opening_tools {
            Some(tools) => tools.to_vec(),
            None => config.tools.definitions(),
        };
        let leading = SystemMessage {
            content: UserContent::Text(config.system_prompt.clone()),
            tools_added: (!opening.is_empty()).then_some(opening),
            timestamp: 0,
            ..SystemMessage::default()
        };
        std::iter::once(leading.into())
            .chain(state.view.messages.iter().cloned())
            .collect()
    }

    /// The transcript: the prompts, responses and tool results, and the system messages
    /// that record tool changes. The tools the conversation declared first are not in it
    /// (see [`transcript`](Self::transcript)).
    pub fn messages(&self) -> Vec<Message> {
        self.shared.conversation().view.messages.clone()
    }

    /// Replace the transcript (takes effect at the next run).
    pub fn set_messages(&self, messages: Vec<Message>) {
        self.shared.conversation().set_transcript(messages);
    }

    /// The `error_message` of the last failed turn.
    pub fn error_message(&self) -> Option<String> {
        self.shared.conversation().view.error_message.clone()
    }

    /// A run is in progress.
    pub fn is_streaming(&self) -> bool {
        self.shared.conversation().slot.is_busy()
    }

    /// Clear the transcript, the queues and the last error; a run paused for approval is
    /// discarded (its saved state can still be resumed).
    ///
    /// # Errors
    /// A run is in progress.
    pub fn reset(&self) -> Result<(), AgentError> {
        let mut state = self.shared.conversation();
        if state.slot.is_busy() {
            return Err(AgentError::BusyResetting);
        }
        state.view = AgentState::default();
        state.opening_tools = None;
        state.steering.clear();
        state.follow_ups.clear();
        state.awaiting_approval = false;
        Ok(())
    }

    /// Change the system prompt (from the next request on).
    pub fn set_system_prompt(&self, prompt: impl Into<String>) {
        let prompt = prompt.into();
        self.shared
            .update_config(|config| config.system_prompt = prompt);
    }

    /// Change the model (from the next request on).
    pub fn set_model(&self, model: Arc<dyn LanguageModel>) {
        self.shared.update_config(|config| config.model = model);
    }

    /// Change the thinking level (from the next request on).
    pub fn set_thinking_level(&self, level: ThinkingLevel) {
        self.shared
            .update_config(|config| config.thinking_level = level);
    }

    /// Wait until no run is in progress (returns at once when idle).
    pub async fn wait_for_idle(&self) {
        let mut busy = self.shared.conversation().slot.watch();
        // `wait_for` only fails when the sender is gone, and `self` keeps it alive.
        let _ = busy.wait_for(|busy| !*busy).await;
    }
}
