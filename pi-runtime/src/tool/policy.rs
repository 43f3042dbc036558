//! `ToolPolicy`: how the dispatcher runs a tool's calls (time limit, retry budget, named
//! concurrency limit, output cap), declared on the tool and defaulted on the agent.

use std::borrow::Cow;
use std::time::Duration;

/// The execution policy of a tool: what the dispatcher, the one path every call takes (the
/// model's calls, nested calls from code mode, [`Agent::run_tool_call`](crate::Agent::run_tool_call),
/// an MCP server's calls), enforces around it. Every field is optional; a field the tool
/// leaves unset takes the agent's default
/// ([`AgentBuilder::tool_policy`](crate::agent::AgentBuilder::tool_policy)), and without one
/// there is no limit.
///
/// `#[tool(timeout = "30s", retries = 3, concurrency = "db:4", max_output = "64KiB")]`
/// declares one at compile time; [`FnTool::with_policy`](crate::FnTool::with_policy) and
/// [`McpClientBuilder::tool_policy`](crate::mcp::McpClientBuilder) at run time.
///
/// | field | what the dispatcher does |
/// |---|---|
/// | `timeout` | cancels the call's signal when it runs longer; a tool that then ends within a grace period (one second) gives an error result saying it timed out, followed by what it returned (its work may be done); one that does not is abandoned, and the model reads that it timed out and may still be running. The call runs on a thread of its own, so the limit fires on time even when the tool blocks its thread; an abandoned call's thread runs on until the tool returns, and its result is dropped |
/// | `retries` | the failed calls of this tool one run allows (invalid arguments and [`ToolError::retry`](crate::ToolError::retry) count, other tool errors do not), whether the model made them or another tool did (code mode, [`ToolContext::call_tool`](crate::ToolContext::call_tool)); one more ends the run with [`RunEnd::RetriesExhausted`](crate::agent::RunEnd::RetriesExhausted) |
/// | `concurrency` | at most `permits` calls of every tool naming the same limit run at once (for the agent definition and all its conversations) |
/// | `max_output` | a longer text result is cut in pi's truncation format, and the full text is saved to a file the result names |
///
/// ```
/// use std::time::Duration;
///
/// use pi_runtime::tool::ToolPolicy;
///
/// let policy = ToolPolicy::new()
///     .with_timeout(Duration::from_secs(30))
///     .with_retries(3)
///     .with_concurrency("db", 4)
///     .with_max_output(64 * 1024);
/// let defaults = ToolPolicy::new().with_timeout(Duration::from_secs(5)).with_retries(1);
/// let effective = ToolPolicy::new().with_retries(0).or(&defaults);
/// assert_eq!((effective.timeout, effective.retries), (Some(Duration::from_secs(5)), Some(0)));
/// assert_eq!(policy.concurrency.map(|limit| limit.permits), Some(4));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolPolicy {
    /// How long one call may run (after it got its concurrency permit). A call with a time
    /// limit runs on a thread of its own (in the caller's Tokio runtime), so that the limit
    /// fires even when the tool blocks its thread.
    pub timeout: Option<Duration>,
    /// How many failed calls of this tool one run allows.
    pub retries: Option<u32>,
    /// The named limit the tool's calls share with every tool naming it.
    pub concurrency: Option<Concurrency>,
    /// The most bytes of text a result may carry.
    pub max_output: Option<usize>,
}

/// A named concurrency limit: `concurrency = "db:4"`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Concurrency {
    /// The limit's name; every tool naming it shares its permits.
    pub name: Cow<'static, str>,
    /// How many calls may hold the limit at once (at least one).
    pub permits: usize,
}

impl ToolPolicy {
    /// No limits.
    #[must_use]
    pub const fn new() -> Self {
        ToolPolicy {
            timeout: None,
            retries: None,
            concurrency: None,
            max_output: None,
        }
    }

    /// Cancel a call that runs longer than `timeout` (see the table above for what the
    /// model then reads and what happens to a tool that does not stop).
    #[must_use]
    pub const fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Allow `retries` failed calls per run.
    #[must_use]
    pub const fn with_retries(mut self, retries: u32) -> Self {
        self.retries = Some(retries);
        self
    }

    /// Share the limit `name` of `permits` calls at once (`permits` is at least one).
    #[must_use]
    pub fn with_concurrency(mut self, name: impl Into<Cow<'static, str>>, permits: usize) -> Self {
        self.concurrency = Some(Concurrency {
            name: name.into(),
            permits: permits.max(1),
        });
        self
    }

    /// Cut text results longer than `bytes`.
    #[must_use]
    pub const fn with_max_output(mut self, bytes: usize) -> Self {
        self.max_output = Some(bytes);
        self
    }

    /// This policy with each unset field taken from `defaults`.
    #[must_use]
    pub fn or(self, defaults: &ToolPolicy) -> Self {
        ToolPolicy {
            timeout: self.timeout.or(defaults.timeout),
            retries: self.retries.or(defaults.retries),
            concurrency: self.concurrency.or_else(|| defaults.concurrency.clone()),
            max_output: self.max_output.or(defaults.max_output),
        }
    }

    /// Whether no field is set (the dispatcher then adds nothing around a call).
    pub fn is_empty(&self) -> bool {
        *self == ToolPolicy::new()
    }
}
