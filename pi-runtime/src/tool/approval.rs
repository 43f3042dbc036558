//! Whether a call needs a person's approval before it executes: a tool's own
//! [`ApprovalPolicy`] (what `#[tool(approval = ...)]` writes) and the [`Approval`] a policy
//! answers for one call. The agent's policy for every other tool, and what a run does with a
//! call that needs approval, live in [`agent::approval`](crate::agent::approval).

use serde_json::Value;

/// A policy's answer for one call.
///
/// ```
/// use pi_runtime::tool::Approval;
///
/// assert!(Approval::needed("deletes files").is_needed());
/// assert!(!Approval::NotNeeded.is_needed());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Approval {
    /// The call may run without asking anyone.
    #[default]
    NotNeeded,
    /// A person must approve the call first.
    Needed {
        /// Why, for the person asked (it is never shown to the model).
        reason: String,
    },
}

impl Approval {
    /// A call that needs approval, for this reason.
    pub fn needed(reason: impl Into<String>) -> Self {
        Approval::Needed {
            reason: reason.into(),
        }
    }

    /// Whether a person must approve the call.
    pub fn is_needed(&self) -> bool {
        matches!(self, Approval::Needed { .. })
    }
}

/// A tool's own approval policy ([`ToolSettings::approval`](super::ToolSettings::approval)).
/// It is data rather than a bare function so that a run knows, before preparing a batch,
/// whether any call of it could need approval (a sequential batch then prepares every call
/// before executing any; see [`agent::approval`](crate::agent::approval)).
///
/// ```
/// use pi_runtime::tool::{Approval, ApprovalPolicy};
/// use serde_json::{Value, json};
///
/// fn outside_tmp(args: &Value) -> Approval {
///     match args["path"].as_str() {
///         Some(path) if path.starts_with("/tmp/") => Approval::NotNeeded,
///         _ => Approval::needed("deletes outside /tmp"),
///     }
/// }
/// let policy = ApprovalPolicy::When(outside_tmp);
/// assert_eq!(policy.check("delete", &json!({"path": "/tmp/x"})), Approval::NotNeeded);
/// assert_eq!(
///     ApprovalPolicy::Always.check("delete", &json!({})),
///     Approval::needed("`delete` always needs approval")
/// );
/// ```
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub enum ApprovalPolicy {
    /// The tool never asks (the default); the agent's policy may still ask.
    #[default]
    Never,
    /// Every call asks.
    Always,
    /// This function decides from the call's validated arguments.
    When(fn(&Value) -> Approval),
}

impl ApprovalPolicy {
    /// The answer for a call of `tool` with these validated arguments.
    pub fn check(self, tool: &str, args: &Value) -> Approval {
        match self {
            ApprovalPolicy::Never => Approval::NotNeeded,
            ApprovalPolicy::Always => Approval::needed(format!("`{tool}` always needs approval")),
            ApprovalPolicy::When(policy) => policy(args),
        }
    }

    /// Whether this policy can ever ask.
    pub fn may_ask(self) -> bool {
        !matches!(self, ApprovalPolicy::Never)
    }
}
