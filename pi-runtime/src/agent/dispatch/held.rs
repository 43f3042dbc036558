//! A batch paused for approval, as data: one [`HeldCall`] per call in source order, what
//! the run state keeps across the pause; the check that turns it, with one decision per
//! pending call, into a batch that can go on ([`decide`]); and the preflight an edited
//! call goes through again ([`preflight_edits`]). Both run before anything executes, so a
//! refused resume leaves no trace.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::call::{self, CallScope, Preflight};
use crate::agent::approval::{ApprovalDecision, ApprovalError, Decision, PendingCall};
use crate::agent::failure::CallFailure;
use crate::agent::turn_tools::TurnTools;
use crate::message::{AssistantMessage, ToolCall};
use crate::tool::{Registration, ToolResult};

/// One call of a paused batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "status",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub(crate) enum HeldCall {
    /// It ended in preflight (invalid, blocked, unknown tool); its `tool_execution_end` was
    /// emitted before the pause.
    Settled {
        result: ToolResult,
        failure: Option<CallFailure>,
    },
    /// Prepared and needing no approval: it runs with the approved calls.
    Ready { args: Value },
    /// Waiting for a decision; `args_hash` is taken at the pause.
    Pending {
        pending: PendingCall,
        args_hash: String,
    },
    /// A person denied it; its end is emitted when the batch goes on.
    Denied { reason: String },
}

impl HeldCall {
    pub(crate) fn pending(pending: PendingCall) -> Self {
        let args_hash = args_hash(&pending.args);
        HeldCall::Pending { pending, args_hash }
    }

    pub(crate) fn as_pending(&self) -> Option<&PendingCall> {
        match self {
            HeldCall::Pending { pending, .. } => Some(pending),
            _ => None,
        }
    }
}

/// The SHA-256 of the arguments' JSON, in hex.
fn args_hash(args: &Value) -> String {
    Sha256::digest(args.to_string().as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// A paused batch with its decisions applied: the calls as they go on, and the edited ones
/// (their index, and the arguments as the person wrote them), which [`preflight_edits`]
/// puts through the whole preflight before the batch may go on.
#[derive(Debug)]
pub(crate) struct Decided {
    calls: Vec<HeldCall>,
    edited: Vec<(usize, Value)>,
}

impl Decided {
    /// The calls, once the edits passed [`preflight_edits`].
    pub(crate) fn into_calls(self) -> Vec<HeldCall> {
        self.calls
    }
}

/// Apply one decision per pending call of `calls` (the batch of `response`): approved and
/// edited calls become ready (edits prepared and validated again), denied ones denied.
///
/// # Errors
/// A missing, duplicate or unknown decision, arguments that no longer match their hash, a
/// call whose tool `tools` lacks, an edit that does not validate, or a batch that does not
/// match its response. `calls` is untouched then.
pub(crate) fn decide(
    calls: &[HeldCall],
    response: &AssistantMessage,
    decisions: Vec<ApprovalDecision>,
    tools: &TurnTools,
) -> Result<Decided, ApprovalError> {
    let tool_calls: Vec<_> = response.tool_calls().collect();
    if tool_calls.len() != calls.len() {
        return Err(ApprovalError::Malformed);
    }
    let mut decided: HashMap<String, Decision> = HashMap::with_capacity(decisions.len());
    for decision in decisions {
        let (id, decision) = decision.into_parts();
        if !calls
            .iter()
            .any(|held| held.as_pending().is_some_and(|p| p.id == id))
        {
            return Err(ApprovalError::UnknownCall { id });
        }
        if decided.contains_key(&id) {
            return Err(ApprovalError::DuplicateDecision { id });
        }
        decided.insert(id, decision);
    }
    let mut resolved = Vec::with_capacity(calls.len());
    let mut edited = Vec::new();
    for (index, (call, held)) in tool_calls.into_iter().zip(calls).enumerate() {
        let tool = tools.get(&call.name).map(Registration::tool);
        let missing = || ApprovalError::ToolMissing {
            id: call.id.clone(),
            tool: call.name.clone(),
        };
        resolved.push(match held {
            HeldCall::Pending {
                pending,
                args_hash: hash,
            } => {
                if pending.id != call.id || pending.tool != call.name {
                    return Err(ApprovalError::Malformed);
                }
                let id = || pending.id.clone();
                if args_hash(&pending.args) != *hash {
                    return Err(ApprovalError::ArgumentsChanged { id: id() });
                }
                match decided.remove(&pending.id) {
                    None => return Err(ApprovalError::MissingDecision { id: id() }),
                    Some(Decision::Deny { reason }) => HeldCall::Denied { reason },
                    Some(Decision::Approve) => {
                        tool.ok_or_else(missing)?;
                        HeldCall::Ready {
                            args: pending.args.clone(),
                        }
                    }
                    Some(Decision::Edit { args }) => {
                        let tool = tool.ok_or_else(missing)?;
                        let invalid =
                            |message: String| ApprovalError::InvalidEdit { id: id(), message };
                        let prepared = (tool.prepare_arguments(&args))
                            .map_err(|error| invalid(error.into_message()))?;
                        let valid = (tool.definition().validate(&prepared))
                            .map_err(|error| invalid(error.into_message()))?;
                        edited.push((index, args));
                        HeldCall::Ready { args: valid }
                    }
                }
            }
            HeldCall::Ready { .. } => {
                tool.ok_or_else(missing)?;
                held.clone()
            }
            HeldCall::Settled { .. } | HeldCall::Denied { .. } => held.clone(),
        });
    }
    Ok(Decided {
        calls: resolved,
        edited,
    })
}

/// Put each edited call of `decided` (a batch of `scope`'s response) through the whole
/// preflight again, exactly as a model's call goes: `prepare_arguments`, validation,
/// `before_tool_call` (which may block it, or replace its arguments) and the approval
/// policies. An edit is the person's approval of the arguments they wrote: a policy that
/// asks about those very arguments is answered; one that asks about arguments
/// `before_tool_call` changed is not (the person never saw them).
///
/// # Errors
/// An edit that does not validate, that the hook blocks (or fails on), or whose changed
/// arguments need approval. Nothing ran then.
pub(super) async fn preflight_edits(
    scope: &CallScope,
    mut decided: Decided,
) -> Result<Decided, ApprovalError> {
    let Some(response) = &scope.assistant else {
        return Err(ApprovalError::Malformed);
    };
    let tool_calls: Vec<&ToolCall> = response.tool_calls().collect();
    for (index, written) in std::mem::take(&mut decided.edited) {
        let (Some(call), Some(HeldCall::Ready { args: approved })) =
            (tool_calls.get(index), decided.calls.get(index))
        else {
            return Err(ApprovalError::Malformed);
        };
        let edited = ToolCall {
            arguments: written,
            arguments_error: None,
            ..(*call).clone()
        };
        let id = || call.id.clone();
        let args = match call::prepare(&edited, scope).await {
            Preflight::Ready(ready) => ready.args,
            Preflight::Held(held) if held.ready.args == *approved => held.ready.args,
            Preflight::Held(held) => {
                return Err(ApprovalError::EditNeedsApproval {
                    id: id(),
                    reason: held.reason,
                });
            }
            Preflight::Immediate(outcome) => {
                let message = outcome.result.text_content();
                return Err(match outcome.failure {
                    Some(CallFailure::Validation | CallFailure::NotFound) => {
                        ApprovalError::InvalidEdit { id: id(), message }
                    }
                    _ => ApprovalError::EditBlocked {
                        id: id(),
                        reason: message,
                    },
                });
            }
        };
        decided.calls[index] = HeldCall::Ready { args };
    }
    Ok(decided)
}

/// The outcome of a call that ended before the pause.
pub(super) fn settled(result: ToolResult, failure: Option<CallFailure>) -> super::Outcome {
    super::Outcome {
        result,
        failure,
        duration_ms: None,
    }
}
