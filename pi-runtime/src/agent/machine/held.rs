//! A batch paused for approval, as data: one [`HeldCall`] per call in source order, what
//! the run state keeps across the pause; and the one place approval decisions are applied
//! ([`decide`]), which turns it, with one decision per pending call, into a batch that can
//! go on. Nothing executes before the decisions pass, so a refused resume leaves no trace.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::agent::approval::{ApprovalDecision, ApprovalError, Decision, PendingCall};
use crate::agent::failure::CallFailure;
use crate::message::AssistantMessage;
use crate::tool::{ToolDefinition, ToolResult};

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
/// (their index, and the arguments as the person wrote them), which the driver puts through
/// the whole preflight before the batch may go on.
#[derive(Debug)]
pub(crate) struct Decided {
    pub(crate) calls: Vec<HeldCall>,
    pub(crate) edited: Vec<(usize, Value)>,
    /// For a run paused inside its batch: each suspended call's index, and the decisions
    /// its sub-agent resumes with.
    pub(crate) nested: Vec<(usize, Vec<ApprovalDecision>)>,
}

impl Decided {
    /// The decisions of a run paused inside its batch, sorted by the calls they resume.
    pub(crate) fn nested(nested: Vec<(usize, Vec<ApprovalDecision>)>) -> Self {
        Decided {
            calls: Vec::new(),
            edited: Vec::new(),
            nested,
        }
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
    tools: &dyn Fn(&str) -> Option<Arc<dyn ToolDefinition>>,
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
        let tool = tools(&call.name);
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
        nested: Vec::new(),
    })
}
