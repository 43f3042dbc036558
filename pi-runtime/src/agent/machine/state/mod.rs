//! [`RunState`]: everything a run has decided so far, and what it needs next.

pub(super) mod batch;

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use self::batch::{Batch, Finished, NestedPause, Step, ToolNote};
use super::Effect;
use super::announce::Announce;
use super::call::{BatchPlan, CallOutcome, CallRecord, CallRef, Preflighted};
use super::held::{self, Decided, HeldCall};
use crate::agent::AgentEvent;
use crate::agent::approval::{ApprovalDecision, ApprovalError, PendingCall, new_pause_id};
use crate::agent::end::RunEnd;
use crate::agent::hooks::TurnControl;
use crate::agent::prompt::Prompt;
use crate::message::{AssistantMessage, Message, StopReason, ToolResultMessage, now_ms};
use crate::stream::ThinkingLevel;
use crate::tool::{Tool, ToolDefinition, ToolResult};
use crate::transcript;

/// The format version of a saved [`RunState`]; a state of another version is refused.
/// Version 2 gave each pause its id.
pub const RUN_STATE_VERSION: u32 = 2;

/// A run in progress, as data: the transcript, the inputs waiting to be added, where the
/// loop stands, and the limits in force. It holds no tools and no model: whoever drives it
/// supplies them.
///
/// A run paused for approval hands one out
/// ([`RunOutcome::paused_state`](crate::agent::RunOutcome::paused_state)). It leaves the process
/// only as a signed file ([`to_signed_json`](Self::to_signed_json)) and comes back only
/// through the signature check ([`from_signed_json`](Self::from_signed_json)): it has no
/// serde implementation, so no state that its key did not sign can be resumed. The events
/// a step queued but did not yet deliver are not part of it.
#[derive(Debug, Clone)]
pub struct RunState {
    version: u32,
    /// The whole transcript; what this run added starts at `first_new`.
    messages: Vec<Message>,
    first_new: usize,
    /// Queued messages to add before the next request.
    pending: Vec<Message>,
    /// The tools the conversation's leading system message declares (the request's own
    /// tool list); the transcript's system messages change them from there. Set at the
    /// conversation's first declaration.
    opening_tools: Option<Arc<[Tool]>>,
    phase: Phase,
    first_turn: bool,
    /// A `finish_turn` hook asked for one more request.
    forced: bool,
    /// The last batch asked for another request (it did not terminate).
    more_tool_calls: bool,
    /// Model requests made so far.
    turns: usize,
    /// The most model requests the run may make.
    max_turns: Option<usize>,
    /// The last batch asked the run to stop.
    terminated: bool,
    /// Why the run ended, once it did.
    end: Option<RunEnd>,
    /// How the run ends once the current turn is over (a tool's retry budget ran out).
    end_after_turn: Option<RunEnd>,
    /// A guardrail tripped while a response was on its way: the run ends so after this
    /// turn, whatever the response, and none of its calls run.
    tripped: Option<RunEnd>,
    /// The agent the conversation was last handed to in this run, by its name (`Some(None)`
    /// for one without a name).
    handed_to: Option<Option<String>>,
    /// The thinking level a `prepare_request` hook chose for the rest of the run.
    thinking_level: Option<ThinkingLevel>,
    /// When the run's time limit ends it, in milliseconds since the Unix epoch.
    deadline_ms: Option<u64>,
    /// While paused for approval: how much of the time limit is left (the clock stops).
    time_left_ms: Option<u64>,
    /// One record per tool result of this run, in the order of the result messages: what a
    /// result message alone does not say.
    calls: Vec<CallRecord>,
    /// Failed calls of this run that leave no result message (nested calls, `run_tool_call`)
    /// and that the retry budgets count, per tool.
    nested_failures: BTreeMap<String, u32>,
    /// The tools of nested calls that failed since the last batch ended, with their retry
    /// budgets: the end of the next batch checks them.
    nested_retried: Vec<(String, Option<u32>)>,
    /// Events a step decided on and the driver has not delivered yet, as small notes: each
    /// event is built from the state when it is delivered, so an event is moved once.
    outbox: VecDeque<Announce>,
    /// The turn whose `turn_end` is in the outbox.
    ended_turn: Option<(Arc<AssistantMessage>, Vec<Arc<ToolResultMessage>>)>,
    /// The partial results of the `tool_execution_update`s in the outbox, in order.
    updates: VecDeque<ToolResult>,
    /// The sub-agents' events in the outbox, in order.
    nested: VecDeque<AgentEvent>,
    /// Pauses of running calls' sub-agents, reported before their calls' ends.
    staged: Vec<(usize, NestedPause)>,
}

/// How a [`RunState`] serializes, field by field (serde's remote derive): the functions it
/// derives are private to this module, so a state is read only where the signature is
/// checked (`approval::signed`, through [`RunState::from_raw_json`]). The compiler keeps it
/// in step with [`RunState`]: reading builds a `RunState` from every field.
#[derive(Serialize, Deserialize)]
#[serde(remote = "RunState", rename_all = "camelCase")]
struct Saved {
    version: u32,
    messages: Vec<Message>,
    first_new: usize,
    pending: Vec<Message>,
    opening_tools: Option<Arc<[Tool]>>,
    phase: Phase,
    first_turn: bool,
    forced: bool,
    more_tool_calls: bool,
    turns: usize,
    max_turns: Option<usize>,
    terminated: bool,
    end: Option<RunEnd>,
    end_after_turn: Option<RunEnd>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tripped: Option<RunEnd>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    handed_to: Option<Option<String>>,
    thinking_level: Option<ThinkingLevel>,
    deadline_ms: Option<u64>,
    time_left_ms: Option<u64>,
    calls: Vec<CallRecord>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    nested_failures: BTreeMap<String, u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    nested_retried: Vec<(String, Option<u32>)>,
    #[serde(skip)]
    outbox: VecDeque<Announce>,
    #[serde(skip)]
    ended_turn: Option<(Arc<AssistantMessage>, Vec<Arc<ToolResultMessage>>)>,
    #[serde(skip)]
    updates: VecDeque<ToolResult>,
    #[serde(skip)]
    nested: VecDeque<AgentEvent>,
    #[serde(skip)]
    staged: Vec<(usize, NestedPause)>,
}

/// A sub-agent's state inside the state of the run above it, which signs both
/// (`#[serde(with = "boxed")]`).
pub(super) mod boxed {
    use serde::{Deserializer, Serializer};

    use super::{RunState, Saved};

    pub(in crate::agent::machine) fn serialize<S: Serializer>(
        state: &RunState,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        Saved::serialize(state, serializer)
    }

    pub(in crate::agent::machine) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Box<RunState>, D::Error> {
        Saved::deserialize(deserializer).map(Box::new)
    }
}

/// Where the loop stands.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(
    tag = "phase",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
enum Phase {
    /// Nothing happened yet.
    Start {
        prompts: Vec<Message>,
        skip_initial_steering: bool,
    },
    /// Waiting for the tools to declare before adding `messages` (the prompts, or the
    /// messages queued for the next request).
    Declare {
        messages: Vec<Message>,
        then: AfterDeclare,
    },
    /// Waiting for the steering queue.
    Steering { then: AfterSteering },
    /// Deciding whether to ask the model (again).
    TurnCheck,
    /// Waiting for the model's response.
    Request,
    /// The response's batch is running.
    Batch(Batch),
    /// The batch is held for approval after its preflight: the run paused here. A resume
    /// claims `pause_id` (see [`PauseLedger`](crate::agent::approval::PauseLedger)).
    Approval {
        response: Arc<AssistantMessage>,
        calls: Vec<HeldCall>,
        pause_id: String,
    },
    /// Calls of the batch run sub-agents that paused for approval, and nothing else in the
    /// batch can go on: the run paused here. A resume claims `pause_id`.
    /// (Boxed: a rare phase, kept from making every phase larger.)
    Suspended { batch: Box<Batch>, pause_id: String },
    /// Waiting for the `finish_turn` hook.
    FinishTurn {
        response: Arc<AssistantMessage>,
        results: Vec<Arc<ToolResultMessage>>,
    },
    /// Waiting for the follow-up queue.
    FollowUps,
    /// The run ended.
    Done,
}

/// What the steering messages are for.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum AfterSteering {
    /// The first turn, which already started.
    FirstTurn,
    /// A later turn, about to start.
    NextTurn,
    /// The turn that just ended; the loop then decides whether to go on.
    TurnEnded,
}

/// Where the run goes once its messages are declared and added.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum AfterDeclare {
    /// The prompts are in: poll steering for the first turn.
    FirstSteering,
    /// The prompts are in: decide on the first request.
    TurnCheck,
    /// Ask the model.
    Request,
}

/// The limits a new run starts with.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct StateLimits {
    pub(crate) max_turns: Option<usize>,
    pub(crate) deadline_ms: Option<u64>,
}

/// A state of a version this build cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "run state version {found} is not supported (this build reads version {RUN_STATE_VERSION})"
)]
pub struct UnsupportedRunState {
    found: u32,
}

impl RunState {
    /// A run over `messages` that first adds `prompts`.
    pub(crate) fn new(
        messages: Vec<Message>,
        opening_tools: Option<Arc<[Tool]>>,
        prompts: Vec<Message>,
        skip_initial_steering: bool,
        limits: StateLimits,
    ) -> Self {
        RunState {
            version: RUN_STATE_VERSION,
            first_new: messages.len(),
            messages,
            pending: Vec::new(),
            opening_tools,
            phase: Phase::Start {
                prompts,
                skip_initial_steering,
            },
            first_turn: true,
            forced: false,
            more_tool_calls: true,
            turns: 0,
            max_turns: limits.max_turns,
            terminated: false,
            end: None,
            end_after_turn: None,
            tripped: None,
            handed_to: None,
            thinking_level: None,
            deadline_ms: limits.deadline_ms,
            time_left_ms: None,
            calls: Vec::new(),
            nested_failures: BTreeMap::new(),
            nested_retried: Vec::new(),
            outbox: VecDeque::new(),
            ended_turn: None,
            updates: VecDeque::new(),
            nested: VecDeque::new(),
            staged: Vec::new(),
        }
    }

    /// A run over `transcript` (the conversation so far) that first adds `prompt`, polls
    /// the steering queue, and asks the model; with no turn or time limit (see
    /// [`with_max_turns`](Self::with_max_turns)).
    pub fn start(transcript: Vec<Message>, prompt: impl Into<Prompt>) -> Self {
        let Prompt(prompts) = prompt.into();
        RunState::new(transcript, None, prompts, false, StateLimits::default())
    }

    /// End the run with [`RunEnd::TurnLimit`] rather than make more than `max_turns` model
    /// requests.
    #[must_use]
    pub fn with_max_turns(mut self, max_turns: usize) -> Self {
        self.max_turns = Some(max_turns);
        self
    }

    /// Apply one decision per pending call of a paused run and go on with its batch:
    /// approved calls execute with their arguments, edited ones with the arguments the
    /// person wrote (prepared and validated by the tool that `tools` finds), denied ones end
    /// with an error result carrying the reason. The decisions are checked before anything
    /// changes. A state that is not paused takes no decisions.
    ///
    /// This does not claim the pause (see [`pause_id`](Self::pause_id)), and an edit does
    /// not pass your `before_tool_call` or policies again:
    /// [`Agent::resume_with`](crate::agent::Agent::resume_with) does both.
    ///
    /// # Errors
    /// The decisions do not fit the pending calls (missing, duplicate or unknown, changed
    /// arguments, an edit that does not validate), or `tools` lacks a tool the batch needs.
    pub fn decide(
        &mut self,
        decisions: impl IntoIterator<Item = ApprovalDecision>,
        tools: &dyn Fn(&str) -> Option<Arc<dyn ToolDefinition>>,
    ) -> Result<(), ApprovalError> {
        if let Some(decided) = self.decided(decisions.into_iter().collect(), tools)? {
            self.go_on(decided);
        }
        Ok(())
    }

    /// Check a deserialized state before driving it.
    ///
    /// # Errors
    /// The state was written by a build with another format version.
    pub fn check_version(&self) -> Result<(), UnsupportedRunState> {
        if self.version == RUN_STATE_VERSION {
            Ok(())
        } else {
            Err(UnsupportedRunState {
                found: self.version,
            })
        }
    }

    /// This state as JSON (see [`Saved`]), for the signed envelope.
    pub(crate) fn to_raw_json(&self) -> Box<serde_json::value::RawValue> {
        let mut json = Vec::new();
        // Plain data (strings, numbers, maps with string keys): this always serializes.
        Saved::serialize(self, &mut serde_json::Serializer::new(&mut json))
            .unwrap_or_else(|_| unreachable!("a run state is plain data"));
        let json =
            String::from_utf8(json).unwrap_or_else(|_| unreachable!("serde_json writes UTF-8"));
        serde_json::value::RawValue::from_string(json)
            .unwrap_or_else(|_| unreachable!("serde_json writes valid JSON"))
    }

    /// Read a state from its JSON; only the signed envelope calls this, once the signature
    /// matched.
    pub(crate) fn from_raw_json(json: &str) -> Result<RunState, serde_json::Error> {
        let mut reader = serde_json::Deserializer::from_str(json);
        let state = Saved::deserialize(&mut reader)?;
        reader.end()?;
        Ok(state)
    }

    /// The transcript: the messages before the run and those it added.
    pub fn transcript(&self) -> &[Message] {
        &self.messages
    }

    /// How many messages the run has added so far.
    pub fn new_messages(&self) -> usize {
        self.messages.len() - self.first_new
    }

    /// The messages the run has added so far.
    pub(crate) fn added(&self) -> &[Message] {
        &self.messages[self.first_new.min(self.messages.len())..]
    }

    /// The run ended.
    pub fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done)
    }

    /// Model requests made so far.
    pub fn turns(&self) -> usize {
        self.turns
    }

    /// Why the run ended, once it did.
    pub fn end(&self) -> Option<&RunEnd> {
        self.end.as_ref()
    }

    /// The run paused for approval.
    pub fn is_paused(&self) -> bool {
        matches!(self.phase, Phase::Approval { .. } | Phase::Suspended { .. })
    }

    /// The id of this pause, while the run is paused for approval: random, signed with the
    /// state, and claimed by the resume ([`PauseLedger`](crate::agent::approval::PauseLedger)), so
    /// that the pause resumes once.
    pub fn pause_id(&self) -> Option<&str> {
        match &self.phase {
            Phase::Approval { pause_id, .. } | Phase::Suspended { pause_id, .. } => Some(pause_id),
            _ => None,
        }
    }

    /// The calls a paused run waits to have decided, in source order: its own, or those of
    /// the sub-agents its calls run (each with its [`path`](PendingCall::path)).
    pub fn pending_approvals(&self) -> impl Iterator<Item = &PendingCall> {
        let (calls, suspended) = match &self.phase {
            Phase::Approval { calls, .. } => (calls.as_slice(), None),
            Phase::Suspended { batch, .. } => (&[][..], Some(&**batch)),
            _ => (&[][..], None),
        };
        let own = calls.iter().filter_map(HeldCall::as_pending);
        own.chain(suspended.into_iter().flat_map(Batch::nested_pending))
    }

    /// A batch just finished: its results are in the transcript, and the turn is about to
    /// end.
    #[cfg(test)]
    pub(crate) fn is_after_batch(&self) -> bool {
        matches!(&self.phase, Phase::FinishTurn { results, .. } if !results.is_empty())
            && self.outbox.is_empty()
    }

    /// The absolute time limit, in milliseconds since the Unix epoch.
    pub(crate) fn deadline_ms(&self) -> Option<u64> {
        self.deadline_ms
    }

    /// The thinking level a `prepare_request` hook set for the rest of the run.
    pub(crate) fn thinking_level(&self) -> Option<ThinkingLevel> {
        self.thinking_level
    }

    /// Count the time limit from another start (a durable run's recorded one).
    #[cfg(any(test, feature = "restate"))]
    pub(crate) fn set_deadline_ms(&mut self, deadline_ms: Option<u64>) {
        self.deadline_ms = deadline_ms;
    }

    pub(crate) fn set_thinking_level(&mut self, level: ThinkingLevel) {
        self.thinking_level = Some(level);
    }

    /// What the run needs next. Phases that wait for an answer return the same effect until
    /// it arrives.
    #[allow(
        clippy::should_implement_trait,
        reason = "a run is no iterator: each effect waits for its answer"
    )]
    pub fn next(&mut self) -> Effect {
        if !self.outbox.is_empty() {
            return Effect::Emit;
        }
        match &mut self.phase {
            Phase::Start { .. } => {
                let Phase::Start {
                    prompts,
                    skip_initial_steering,
                } = std::mem::replace(&mut self.phase, Phase::TurnCheck)
                else {
                    unreachable!("matched above")
                };
                self.outbox.push_back(Announce::AgentStart);
                self.outbox.push_back(Announce::TurnStart);
                self.phase = Phase::Declare {
                    messages: prompts,
                    then: if skip_initial_steering {
                        AfterDeclare::TurnCheck
                    } else {
                        AfterDeclare::FirstSteering
                    },
                };
                self.next()
            }
            Phase::Declare { .. } => Effect::Declare,
            Phase::Steering { .. } => Effect::PollSteering,
            Phase::TurnCheck => {
                let wants_request = self.more_tool_calls || self.forced || !self.pending.is_empty();
                if wants_request && self.max_turns.is_some_and(|max| self.turns >= max) {
                    let max_turns = self.max_turns.unwrap_or_default();
                    self.finish(RunEnd::TurnLimit { max_turns });
                } else if wants_request {
                    if self.first_turn {
                        self.first_turn = false;
                        self.begin_request();
                    } else if self.pending.is_empty() {
                        self.phase = Phase::Steering {
                            then: AfterSteering::NextTurn,
                        };
                    } else {
                        self.outbox.push_back(Announce::TurnStart);
                        self.begin_request();
                    }
                } else {
                    self.phase = Phase::FollowUps;
                }
                self.next()
            }
            Phase::Request => Effect::Request,
            Phase::Batch(batch) => match batch.step(&mut self.messages, &mut self.outbox) {
                Step::Effect(effect) => effect,
                Step::Emit => Effect::Emit,
                Step::Hold(calls) => {
                    self.hold(calls);
                    self.next()
                }
                Step::Suspend => {
                    self.suspend();
                    self.next()
                }
                Step::Finished(finished) => {
                    self.finish_batch(finished);
                    self.next()
                }
            },
            Phase::Approval { .. } | Phase::Suspended { .. } => Effect::Pause,
            Phase::FinishTurn { .. } => Effect::FinishTurn,
            Phase::FollowUps => Effect::PollFollowUps,
            // The run is over: its messages move out of the state.
            Phase::Done => Effect::Done(
                self.messages
                    .split_off(self.first_new.min(self.messages.len())),
            ),
        }
    }

    /// The turn the `finish_turn` hook is asked about: its response and its batch's results.
    pub fn finishing_turn(&self) -> Option<(&Arc<AssistantMessage>, &[Arc<ToolResultMessage>])> {
        match &self.phase {
            Phase::FinishTurn { response, results } => Some((response, results)),
            _ => None,
        }
    }

    /// The tools the conversation declared first (its leading system message's), once a
    /// declaration set them.
    pub(crate) fn opening_tools(&self) -> Option<&Arc<[Tool]>> {
        self.opening_tools.as_ref()
    }

    /// Declare `executable`, the tools the next request can run, then add the waiting
    /// messages: where the transcript (the leading declaration, then its system messages)
    /// declares other tools, a system message records the difference
    /// ([`transcript::declare_tool_changes`]).
    pub fn declare(&mut self, executable: &[Tool]) {
        let Phase::Declare { messages, then } =
            std::mem::replace(&mut self.phase, Phase::TurnCheck)
        else {
            debug_assert!(false, "no declaration was asked for");
            return;
        };
        let opening = Arc::clone(
            self.opening_tools
                .get_or_insert_with(|| Arc::from(executable)),
        );
        let declared =
            transcript::declare_after_opening(&opening, &self.messages, messages, executable);
        for message in declared {
            self.add(message);
        }
        self.phase = match then {
            AfterDeclare::FirstSteering => Phase::Steering {
                then: AfterSteering::FirstTurn,
            },
            AfterDeclare::TurnCheck => Phase::TurnCheck,
            AfterDeclare::Request => Phase::Request,
        };
    }

    /// The messages of the queue [`next`](Self::next) asked for.
    pub fn queued(&mut self, messages: Vec<Message>) {
        match self.phase {
            Phase::Steering { then } => {
                self.pending = messages;
                match then {
                    AfterSteering::FirstTurn | AfterSteering::TurnEnded => {
                        self.phase = Phase::TurnCheck;
                    }
                    AfterSteering::NextTurn => {
                        self.outbox.push_back(Announce::TurnStart);
                        self.begin_request();
                    }
                }
            }
            Phase::FollowUps => {
                if messages.is_empty() {
                    let end = if self.terminated {
                        RunEnd::Terminated
                    } else {
                        RunEnd::Completed
                    };
                    self.finish(end);
                } else {
                    self.pending = messages;
                    self.more_tool_calls = true;
                    self.phase = Phase::TurnCheck;
                }
            }
            _ => debug_assert!(false, "no queue was asked for"),
        }
    }

    /// The model's response (already delivered as events by the driver).
    pub fn responded(&mut self, response: Arc<AssistantMessage>) {
        self.messages.push(Arc::clone(&response).into());
        self.turns += 1;
        self.more_tool_calls = false;
        self.terminated = false;
        self.phase = if response.stop_reason.is_failure()
            || response.tool_calls().next().is_none()
            || self.tripped.is_some()
        {
            // Calls in a failed response never run: its content may be cut off anywhere;
            // nor do those of a response a guardrail stopped.
            Phase::FinishTurn {
                response,
                results: Vec::new(),
            }
        } else {
            Phase::Batch(Batch::new(response))
        };
    }

    /// How the response's batch runs: the answer to [`Effect::PlanBatch`].
    pub fn plan_batch(&mut self, plan: BatchPlan) {
        match &mut self.phase {
            Phase::Batch(batch) => batch.planned(plan),
            _ => debug_assert!(false, "no batch was planned"),
        }
    }

    /// What the preflight of the batch's call `index` came to: the answer to
    /// [`Effect::Preflight`].
    pub fn preflighted(&mut self, index: usize, preflighted: Preflighted) {
        match &mut self.phase {
            Phase::Batch(batch) => batch.preflighted(index, preflighted, &mut self.outbox),
            _ => debug_assert!(false, "no preflight was asked for"),
        }
    }

    /// A progress update of the batch's running call `index` (see [`Effect::Execute`]):
    /// deliver the `tool_execution_update` it queues.
    pub fn updated(&mut self, index: usize, partial: ToolResult) {
        match &self.phase {
            Phase::Batch(batch) if batch.updated(index) => {
                self.updates.push_back(partial);
                self.outbox.push_back(Announce::ToolUpdate(index));
            }
            _ => debug_assert!(false, "call {index} is not running"),
        }
    }

    /// The batch's running call `index` runs a sub-agent, which reported `event` (already
    /// [`Nested`](AgentEvent::Nested) under the call's path): deliver it as it is. An event
    /// of a call that is not running any more (its tool left a task running that still
    /// reports) is dropped.
    pub fn nested(&mut self, index: usize, event: AgentEvent) {
        if let Phase::Batch(batch) = &self.phase
            && batch.updated(index)
        {
            self.nested.push_back(event);
            self.outbox.push_back(Announce::Nested);
        }
    }

    /// The batch's running call `index` runs a sub-agent, which paused for approval as
    /// `child`: the call's end, which follows, does not end it. It waits with the batch,
    /// and the run pauses once nothing else can go on; a resume with decisions about the
    /// sub-agent's pending calls (named by their paths, `<call id>/...`) resumes `child`.
    pub(crate) fn sub_agent_paused(&mut self, index: usize, child: RunState) {
        if let Phase::Batch(batch) = &self.phase
            && batch.updated(index)
        {
            let id = &batch.call(index).id;
            let pending = (child.pending_approvals().cloned())
                .map(|pending| pending.nested_under(id))
                .collect();
            let pause = NestedPause {
                pending,
                state: Box::new(child),
            };
            self.staged.push((index, pause));
        }
    }

    /// The batch's running call `index` ended (see [`Effect::Execute`]): deliver the
    /// `tool_execution_end` it queues.
    pub fn executed(&mut self, index: usize, outcome: CallOutcome) {
        let Phase::Batch(batch) = &mut self.phase else {
            debug_assert!(false, "no call is running");
            return;
        };
        // A call whose sub-agent paused has not ended (see `sub_agent_paused`).
        match self.staged.iter().position(|(staged, _)| *staged == index) {
            Some(at) => batch.suspended(index, self.staged.swap_remove(at).1),
            None => batch.executed(index, outcome, &mut self.outbox),
        }
    }

    /// The calls handed out by [`Effect::Execute`] that have not ended yet.
    pub fn running_calls(&self) -> Vec<CallRef> {
        match &self.phase {
            Phase::Batch(batch) => batch.running().collect(),
            _ => Vec::new(),
        }
    }

    /// `count` calls of `tool` that leave no result message (a tool's own calls of other
    /// tools, code mode's) failed in a way its retry budget counts, which is `retries`. The
    /// end of the current (or next) batch checks the budget, so report them before its last
    /// call's [`executed`](Self::executed).
    pub fn nested_failed(&mut self, tool: &str, count: u32, retries: Option<u32>) {
        *self.nested_failures.entry(tool.to_owned()).or_default() += count;
        if !self.nested_retried.iter().any(|(name, _)| name == tool) {
            self.nested_retried.push((tool.to_owned(), retries));
        }
    }

    /// The batch ended: its results are in the transcript. The run ends after this turn
    /// when a tool's calls failed more often than its retry budget allows, counting the
    /// failures the run's result messages record and those of nested calls.
    fn finish_batch(&mut self, finished: Finished) {
        let Finished {
            response,
            results,
            records,
            terminate,
            plan,
        } = finished;
        self.more_tool_calls = !terminate;
        self.terminated = terminate;
        let mut retried: Vec<(String, Option<u32>)> = Vec::new();
        let answered = (results.iter().zip(&records))
            .filter(|(_, record)| record.failure.is_some_and(|f| f.counts_as_retry()))
            .map(|(result, _)| &result.tool_name);
        for name in answered {
            if !retried.iter().any(|(known, _)| known == name) {
                let retries = plan.retry_budgets.get(name).copied();
                retried.push((name.clone(), retries));
            }
        }
        for (name, retries) in std::mem::take(&mut self.nested_retried) {
            if !retried.iter().any(|(known, _)| *known == name) {
                retried.push((name, retries));
            }
        }
        self.calls.extend(records);
        for (name, retries) in retried {
            let Some(retries) = retries else { continue };
            if self.retry_failures(&name) > retries as usize {
                self.end_after_turn(RunEnd::RetriesExhausted {
                    tool: name,
                    retries,
                });
                break;
            }
        }
        self.phase = Phase::FinishTurn { response, results };
    }

    /// How many calls of `tool` failed in this run in a way its retry budget counts
    /// ([`CallFailure::counts_as_retry`](crate::agent::failure::CallFailure::counts_as_retry)):
    /// those its result messages record, and the nested ones.
    fn retry_failures(&self, tool: &str) -> usize {
        let results = self.added().iter().filter_map(Message::as_tool_result);
        let answered = results
            .zip(&self.calls)
            .filter(|(result, record)| {
                result.tool_name == tool && record.failure.is_some_and(|f| f.counts_as_retry())
            })
            .count();
        let nested = self.nested_failures.get(tool).copied().unwrap_or(0);
        answered + nested as usize
    }

    /// End the run with `end` when the current turn is over (its `turn_end` first; the
    /// `finish_turn` hook cannot keep it going).
    fn end_after_turn(&mut self, end: RunEnd) {
        self.end_after_turn.get_or_insert(end);
    }

    /// The batch holds calls that need approval; nothing in it executed. The run pauses
    /// after announcing it, and its time limit stops counting.
    fn hold(&mut self, calls: Vec<HeldCall>) {
        let Phase::Batch(batch) = std::mem::replace(&mut self.phase, Phase::TurnCheck) else {
            unreachable!("only a batch holds")
        };
        let response = Arc::clone(batch.response());
        let pending = calls.iter().filter_map(HeldCall::as_pending).cloned();
        self.pause(pending.collect());
        self.phase = Phase::Approval {
            response,
            calls,
            pause_id: new_pause_id(),
        };
    }

    /// Calls of the batch wait for their sub-agents' pending calls, and nothing else in it
    /// can go on: the run pauses inside the batch, as [`hold`](Self::hold) does before it.
    fn suspend(&mut self) {
        let Phase::Batch(batch) = std::mem::replace(&mut self.phase, Phase::TurnCheck) else {
            unreachable!("only a batch suspends")
        };
        self.pause(batch.nested_pending().cloned().collect());
        self.phase = Phase::Suspended {
            batch: Box::new(batch),
            pause_id: new_pause_id(),
        };
    }

    /// The run pauses for `pending`: announced, and its time limit stops counting.
    fn pause(&mut self, pending: Vec<PendingCall>) {
        self.end = Some(RunEnd::AwaitingApproval { pending });
        self.time_left_ms = self
            .deadline_ms
            .map(|deadline| deadline.saturating_sub(now_ms()));
        self.outbox.push_back(Announce::ApprovalRequested);
    }

    /// Check one decision per pending call (see [`held::decide`]) without changing the
    /// state: the batch as it would go on, its edits still to be put through their
    /// preflight. `None` for a state that is not paused (it takes no decisions).
    ///
    /// # Errors
    /// The decisions do not fit the pending calls, or `tools` lacks a tool the batch needs.
    pub(crate) fn decided(
        &self,
        decisions: Vec<ApprovalDecision>,
        tools: &dyn Fn(&str) -> Option<Arc<dyn ToolDefinition>>,
    ) -> Result<Option<Decided>, ApprovalError> {
        if let Phase::Suspended { batch, .. } = &self.phase {
            let nested = batch.decide_nested(decisions)?;
            return Ok(Some(Decided::nested(nested)));
        }
        let Phase::Approval {
            response, calls, ..
        } = &self.phase
        else {
            return match decisions.into_iter().next() {
                Some(decision) => Err(ApprovalError::UnknownCall {
                    id: decision.call_id().to_owned(),
                }),
                None => Ok(None),
            };
        };
        held::decide(calls, response, decisions, tools).map(Some)
    }

    /// The response whose batch is paused.
    pub(crate) fn paused_response(&self) -> Option<&Arc<AssistantMessage>> {
        match &self.phase {
            Phase::Approval { response, .. } => Some(response),
            _ => None,
        }
    }

    /// Go on with the paused batch as `decided` (checked by [`decided`](Self::decided), its
    /// edits through their preflight, its pause claimed). The time limit counts again from
    /// now.
    pub(crate) fn go_on(&mut self, decided: Decided) {
        self.phase = match std::mem::replace(&mut self.phase, Phase::TurnCheck) {
            Phase::Approval { response, .. } => {
                Phase::Batch(Batch::resumed(response, decided.calls))
            }
            Phase::Suspended { mut batch, .. } => {
                batch.resume_nested(decided.nested);
                Phase::Batch(*batch)
            }
            phase => {
                self.phase = phase;
                debug_assert!(false, "the run was not paused");
                return;
            }
        };
        self.end = None;
        if let Some(left) = self.time_left_ms.take() {
            self.deadline_ms = Some(now_ms().saturating_add(left));
        }
    }

    /// The `finish_turn` hook's answer.
    pub fn turn_finished(&mut self, control: TurnControl) {
        let Phase::FinishTurn { response, results } =
            std::mem::replace(&mut self.phase, Phase::TurnCheck)
        else {
            debug_assert!(false, "no turn was finishing");
            return;
        };
        // A failed response ends the run; the hook's answer cannot keep it going.
        let failed = match response.stop_reason {
            StopReason::Aborted => Some(RunEnd::Aborted),
            StopReason::Error => Some(RunEnd::ModelError {
                message: response.error_message.clone().unwrap_or_default(),
            }),
            _ => None,
        };
        self.ended_turn = Some((response, results));
        self.outbox.push_back(Announce::TurnEnd);
        let end = (self.tripped.take().or(failed)).or_else(|| self.end_after_turn.take());
        if let Some(end) = end {
            return self.finish(end);
        }
        match control {
            TurnControl::End => return self.finish(RunEnd::EndedByHook),
            TurnControl::Continue => self.forced = true,
            TurnControl::Proceed => {}
        }
        self.phase = Phase::Steering {
            then: AfterSteering::TurnEnded,
        };
    }

    /// A guardrail tripped with `end` (see [`guardrail`](crate::agent::guardrail)). Before
    /// the request [`Effect::Request`] asks for is made (`before_request`), the run ends now,
    /// without it; otherwise it ends after the current turn, whatever its response says, and
    /// none of the response's calls run.
    pub(crate) fn trip(&mut self, end: RunEnd, before_request: bool) {
        if before_request && matches!(self.phase, Phase::Request) {
            self.finish(end);
        } else {
            self.tripped.get_or_insert(end);
        }
    }

    /// A call of the batch handed the conversation to the agent named `agent` (see
    /// [`handoff`](crate::agent::handoff)).
    pub(crate) fn handed_to(&mut self, agent: Option<String>) {
        self.handed_to = Some(agent);
    }

    /// The name of the agent the conversation was last handed to in this run: `None` if it
    /// was not, `Some(None)` if that agent has no name.
    pub(crate) fn handed_to_agent(&self) -> Option<Option<&str>> {
        self.handed_to.as_ref().map(Option::as_deref)
    }

    /// The messages this run started with (what an input guardrail checks): those it added
    /// before its first response.
    pub(crate) fn input(&self) -> &[Message] {
        let added = self.added();
        let first_response = (added.iter())
            .position(|message| matches!(message, Message::Assistant(_)))
            .unwrap_or(added.len());
        &added[..first_response]
    }

    /// Declare the tools, add the pending messages and ask the model.
    fn begin_request(&mut self) {
        self.forced = false;
        self.phase = Phase::Declare {
            messages: std::mem::take(&mut self.pending),
            then: AfterDeclare::Request,
        };
    }

    /// A prompt or a queued message: announced, then part of the transcript.
    fn add(&mut self, message: Message) {
        let at = self.messages.len();
        self.messages.push(message);
        self.outbox.push_back(Announce::MessageStart(at));
        self.outbox.push_back(Announce::MessageEnd(at));
    }

    fn finish(&mut self, end: RunEnd) {
        self.outbox.push_back(Announce::AgentEnd);
        self.end = Some(end);
        self.phase = Phase::Done;
    }

    /// The next event to deliver, after [`Effect::Emit`].
    pub fn take_event(&mut self) -> Option<AgentEvent> {
        let announce = self.outbox.pop_front()?;
        Some(match announce {
            Announce::AgentStart => AgentEvent::AgentStart,
            Announce::TurnStart => AgentEvent::TurnStart,
            Announce::MessageStart(at) => AgentEvent::MessageStart {
                message: self.messages[at].clone(),
            },
            Announce::MessageEnd(at) => AgentEvent::MessageEnd {
                message: self.messages[at].clone(),
            },
            Announce::TurnEnd => {
                let (message, tool_results) = self
                    .ended_turn
                    .take()
                    .unwrap_or_else(|| unreachable!("a turn_end note follows the turn it ends"));
                AgentEvent::TurnEnd {
                    message,
                    tool_results,
                }
            }
            Announce::AgentEnd => AgentEvent::AgentEnd {
                messages: self.messages[self.first_new..].to_vec(),
            },
            Announce::ApprovalRequested => AgentEvent::ApprovalRequested {
                pending: self.pending_approvals().cloned().collect(),
            },
            Announce::ToolStart(index) => {
                let call = self.batch().call(index);
                AgentEvent::ToolExecutionStart {
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    args: call.arguments.clone(),
                }
            }
            Announce::ToolUpdate(index) => {
                let partial_result = (self.updates.pop_front())
                    .unwrap_or_else(|| unreachable!("each update note has its result"));
                let call = self.batch().call(index);
                AgentEvent::ToolExecutionUpdate {
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    args: call.arguments.clone(),
                    partial_result,
                }
            }
            Announce::Nested => (self.nested.pop_front())
                .unwrap_or_else(|| unreachable!("each nested note has its event")),
            Announce::ToolEnd(index) => {
                let batch = self.batch();
                let call = batch.call(index);
                let outcome = (batch.outcome(index))
                    .unwrap_or_else(|| unreachable!("a call's end is delivered before its result"));
                AgentEvent::ToolExecutionEnd {
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    result: outcome.result.clone(),
                    is_error: outcome.result.is_error,
                    duration_ms: outcome.duration_ms,
                }
            }
        })
    }

    /// The batch whose call an outbox note names.
    fn batch(&self) -> &Batch {
        match &self.phase {
            Phase::Batch(batch) => batch,
            _ => unreachable!("tool events are delivered while their batch runs"),
        }
    }

    /// What the next event to deliver says about a tool call, for the driver's spans.
    pub(crate) fn tool_note(&self) -> Option<ToolNote<'_>> {
        let announce = self.outbox.front()?;
        match &self.phase {
            Phase::Batch(batch) => batch.note(announce),
            _ => None,
        }
    }
}

/// A deadline `limit` from now, in milliseconds since the Unix epoch.
pub(crate) fn deadline_after(limit: std::time::Duration) -> u64 {
    now_ms().saturating_add(u64::try_from(limit.as_millis()).unwrap_or(u64::MAX))
}

/// The [`Instant`](tokio::time::Instant) of a deadline given in milliseconds since the Unix
/// epoch (now, if it has passed).
pub(crate) fn instant_at(deadline_ms: u64) -> tokio::time::Instant {
    let left = deadline_ms.saturating_sub(now_ms());
    tokio::time::Instant::now() + std::time::Duration::from_millis(left)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::{Value, json};

    use super::*;
    use crate::agent::Agent;
    use crate::agent::test_support::timeless;
    use crate::provider::faux::{FauxModel, FauxResponse};
    use crate::tool::{FnTool, ToolResult};

    /// A model that calls `count` twice, one batch each, then answers.
    fn model() -> FauxModel {
        FauxModel::new()
            .respond(FauxResponse::tool_call("c1", "count", json!({"n": 1})))
            .respond(FauxResponse::tool_call("c2", "count", json!({"n": 2})).and_text("more"))
            .respond(FauxResponse::text("counted"))
    }

    /// An agent whose `count` tool records every execution in `ran`.
    fn agent(model: FauxModel, ran: &Arc<Mutex<Vec<String>>>) -> Agent {
        let ran = Arc::clone(ran);
        let count = FnTool::new(
            "count",
            "Count.",
            json!({"type": "object"}),
            move |args, _| {
                ran.lock().unwrap().push(args["n"].to_string());
                async move { Ok(ToolResult::text(format!("counted {}", args["n"]))) }
            },
        );
        Agent::builder().model(model).tools(count).build().unwrap()
    }

    #[tokio::test]
    async fn a_state_saved_after_a_batch_resumes_to_the_same_transcript() {
        let ran = Arc::new(Mutex::new(Vec::new()));
        let whole = agent(model(), &ran);
        let uninterrupted = whole.prompt("count twice").await.unwrap();
        assert_eq!(*ran.lock().unwrap(), ["1", "2"]);

        let ran = Arc::new(Mutex::new(Vec::new()));
        let first = agent(model(), &ran);
        let state = first
            .run_until("count twice", &RunState::is_after_batch)
            .await
            .expect("the run pauses after its first batch");
        assert!(!first.is_streaming(), "the paused run frees its agent");
        let saved = state.to_raw_json();
        assert!(saved.get().contains(r#""phase":"finishTurn""#), "{saved}");

        // Another agent, as a new process would build it, with the rest of the script.
        let restored = RunState::from_raw_json(saved.get()).unwrap();
        let rest = FauxModel::new()
            .respond(FauxResponse::tool_call("c2", "count", json!({"n": 2})).and_text("more"))
            .respond(FauxResponse::text("counted"));
        let second = agent(rest, &ran);
        let resumed = second.resume(restored).await.unwrap();
        assert_eq!(timeless(&resumed), timeless(&uninterrupted));
        assert_eq!(timeless(&second.messages()), timeless(&whole.messages()));
        assert_eq!(*ran.lock().unwrap(), ["1", "2"], "each call ran once");
    }

    #[tokio::test]
    async fn a_state_of_another_version_is_refused_before_anything_runs() {
        let ran = Arc::new(Mutex::new(Vec::new()));
        let first = agent(model(), &ran);
        let state = first
            .run_until("count twice", &RunState::is_after_batch)
            .await
            .unwrap();
        let mut saved: Value = serde_json::from_str(state.to_raw_json().get()).unwrap();
        saved["version"] = json!(RUN_STATE_VERSION + 1);
        let future = RunState::from_raw_json(&saved.to_string()).unwrap();
        let model = FauxModel::new();
        let requests = model.clone();
        let error = agent(model, &ran).resume(future).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "run state version {} is not supported (this build reads version {RUN_STATE_VERSION})",
                RUN_STATE_VERSION + 1
            )
        );
        assert_eq!(requests.request_count(), 0);
        assert_eq!(*ran.lock().unwrap(), ["1"]);
    }
}
