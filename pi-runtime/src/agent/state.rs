//! The agent's observable state and the steering / follow-up queues,
//! kept current from the run's own events.

use std::collections::VecDeque;
use std::sync::Arc;
use tokio::sync::watch;

use super::AgentEvent;
use super::dispatch::RunLimits;
use super::turn_tools::TurnTools;
use crate::message::Message;
use crate::stream::LiveMessage;
use crate::tool::Tool;

/// How many queued messages one drain point delivers. Steering is drained at the start of a
/// run and after every turn; follow-ups only when the run would otherwise stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueMode {
    /// One message per drain point.
    #[default]
    OneAtATime,
    /// Every queued message at once.
    All,
}

/// A snapshot of an agent's state.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct AgentState {
    /// The transcript.
    pub messages: Vec<Message>,
    /// A run is in progress (read from the run slot when the snapshot is taken).
    pub is_streaming: bool,
    /// The assistant message being streamed, if any, as it stands.
    pub streaming_message: Option<LiveMessage>,
    /// Ids of the calls between `tool_execution_start` and `tool_execution_end`, in start
    /// order (a deque: calls mostly end in the order they started, so removing one is cheap
    /// in a batch of any size).
    pub pending_tool_calls: VecDeque<String>,
    /// The `error_message` of the last failed turn.
    pub error_message: Option<String>,
}

/// Whether a run is in progress, and its limits: the one place that says so.
#[derive(Debug)]
pub(crate) struct RunSlot {
    run: Option<RunLimits>,
    /// The tools of the running run's current turn, once it declared them.
    turn_tools: Option<Arc<TurnTools>>,
    /// `true` while a run is in progress, for [`Agent::wait_for_idle`](super::Agent::wait_for_idle).
    busy: watch::Sender<bool>,
}

impl Default for RunSlot {
    fn default() -> Self {
        RunSlot {
            run: None,
            turn_tools: None,
            busy: watch::Sender::new(false),
        }
    }
}

impl RunSlot {
    /// The running run's limits.
    pub(crate) fn current(&self) -> Option<&RunLimits> {
        self.run.as_ref()
    }

    pub(crate) fn is_busy(&self) -> bool {
        self.run.is_some()
    }

    /// The tools of the running run's current turn.
    pub(crate) fn turn_tools(&self) -> Option<&Arc<TurnTools>> {
        self.turn_tools.as_ref()
    }

    /// The running run's turn offers `tools`.
    pub(crate) fn set_turn_tools(&mut self, tools: Arc<TurnTools>) {
        self.turn_tools = Some(tools);
    }

    /// Take the slot for a run; the caller checked it was free.
    pub(crate) fn claim(&mut self, limits: RunLimits) {
        self.run = Some(limits);
        self.busy.send_replace(true);
    }

    /// Free the slot, cancelling the run's signal so that tasks its tools started see the
    /// run is over.
    pub(crate) fn release(&mut self) {
        if let Some(run) = self.run.take() {
            run.signal.cancel();
        }
        self.turn_tools = None;
        self.busy.send_replace(false);
    }

    pub(crate) fn watch(&self) -> watch::Receiver<bool> {
        self.busy.subscribe()
    }
}

/// One conversation's state, behind its lock: the snapshot its events keep current, the run
/// slot, and the queues.
#[derive(Debug, Default)]
pub(crate) struct Conversation {
    pub(crate) view: AgentState,
    pub(crate) slot: RunSlot,
    pub(crate) steering: VecDeque<Message>,
    pub(crate) follow_ups: VecDeque<Message>,
    pub(crate) steering_mode: QueueMode,
    pub(crate) follow_up_mode: QueueMode,
    /// The tools the conversation declared at its first request (see
    /// `RunState::opening_tools`); `None` until then, and again after the transcript is
    /// replaced.
    pub(crate) opening_tools: Option<Arc<[Tool]>>,
    /// The last run paused for approval: its transcript ends with calls that have no
    /// results, so a new run would send an invalid request. Only `resume_with` and `reset`
    /// clear it.
    pub(crate) awaiting_approval: bool,
}

impl Conversation {
    /// Take `messages` as the conversation's transcript. A leading system message (as
    /// [`Agent::transcript`](super::Agent::transcript) writes one) gives the tools the
    /// conversation declared first; the agent's own system prompt stands in for its text.
    pub(crate) fn set_transcript(&mut self, mut messages: Vec<Message>) {
        self.opening_tools = match messages.first() {
            Some(Message::System(leading)) => {
                let tools: Arc<[Tool]> = Arc::from(leading.added());
                messages.remove(0);
                Some(tools)
            }
            _ => None,
        };
        self.view.messages = messages;
    }

    /// Keep the state current with one event, before any listener sees it (as pi's
    /// `Agent` does), so listeners can read a state that already includes the event.
    pub(crate) fn reduce(&mut self, event: &AgentEvent) {
        let view = &mut self.view;
        match event {
            AgentEvent::MessageStart {
                message: Message::Assistant(message),
            } => view.streaming_message = Some(LiveMessage::from_shared(Arc::clone(message))),
            // The first update replaces the start's copy with the live handle; later ones
            // carry the same handle.
            AgentEvent::MessageUpdate { message, .. }
                if !view
                    .streaming_message
                    .as_ref()
                    .is_some_and(|current| current.same_message(message)) =>
            {
                view.streaming_message = Some(message.clone());
            }
            AgentEvent::MessageEnd { message } => {
                view.streaming_message = None;
                view.messages.push(message.clone());
            }
            AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
                view.pending_tool_calls.push_back(tool_call_id.clone());
            }
            AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
                if let Some(i) = view
                    .pending_tool_calls
                    .iter()
                    .position(|id| id == tool_call_id)
                {
                    view.pending_tool_calls.remove(i);
                }
            }
            AgentEvent::TurnEnd { message, .. } => {
                if let Some(error) = &message.error_message {
                    view.error_message = Some(error.clone());
                }
            }
            AgentEvent::AgentEnd { .. } => view.streaming_message = None,
            AgentEvent::ApprovalRequested { .. } => self.awaiting_approval = true,
            _ => {}
        }
    }

    pub(crate) fn poll_steering(&mut self) -> Vec<Message> {
        drain(&mut self.steering, self.steering_mode)
    }

    pub(crate) fn poll_follow_ups(&mut self) -> Vec<Message> {
        drain(&mut self.follow_ups, self.follow_up_mode)
    }
}

fn drain(queue: &mut VecDeque<Message>, mode: QueueMode) -> Vec<Message> {
    match mode {
        QueueMode::All => queue.drain(..).collect(),
        QueueMode::OneAtATime => queue.pop_front().into_iter().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::UserMessage;

    #[test]
    fn queues_drain_one_at_a_time_or_all() {
        let mut inner = Conversation::default();
        for text in ["a", "b", "c"] {
            inner.steering.push_back(UserMessage::text(text).into());
            inner.follow_ups.push_back(UserMessage::text(text).into());
        }
        assert_eq!(inner.poll_steering().len(), 1);
        assert_eq!(inner.poll_steering().len(), 1);
        inner.follow_up_mode = QueueMode::All;
        assert_eq!(inner.poll_follow_ups().len(), 3);
        assert!(inner.poll_follow_ups().is_empty());
        assert_eq!(inner.steering.len(), 1);
    }

    #[test]
    fn pending_calls_follow_start_and_end_events() {
        let mut inner = Conversation::default();
        let start = |id: &str| AgentEvent::ToolExecutionStart {
            tool_call_id: id.into(),
            tool_name: "t".into(),
            args: serde_json::json!({}),
        };
        inner.reduce(&start("c1"));
        inner.reduce(&start("c2"));
        inner.reduce(&AgentEvent::ToolExecutionEnd {
            tool_call_id: "c1".into(),
            tool_name: "t".into(),
            result: crate::ToolResult::text("ok"),
            is_error: false,
            duration_ms: Some(0),
        });
        assert_eq!(inner.view.pending_tool_calls, ["c2"]);
    }
}
