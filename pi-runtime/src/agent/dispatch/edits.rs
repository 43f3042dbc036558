//! The preflight an edited call goes through again before a paused batch goes on: the
//! decisions are applied by the run state ([`RunState::decided`]), and what a person wrote
//! is then checked as a model's arguments would be.
//!
//! [`RunState::decided`]: crate::agent::machine::RunState

use super::call::{self, CallScope, Preflight};
use crate::agent::approval::ApprovalError;
use crate::agent::failure::CallFailure;
use crate::agent::machine::held::{Decided, HeldCall};
use crate::message::ToolCall;

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
