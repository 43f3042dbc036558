//! The sandbox on its own (pi-codemode's `InlineCodemodeSandbox`): a script whose tools are
//! plain async functions returning script values, limited by an interrupt budget instead of
//! (or as well as) a wall-clock time limit. No agent, no pipeline, no result layout.

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::identifier::to_codemode_identifier;
use super::runtime::{
    CallHost, CallOutcome, CallStatus, RawResult, ScriptError, ScriptRun, ScriptTool, run_script,
};
use super::source::DEFAULT_TIMEOUT_MS;
use super::tool::StoreEntry;
use super::vm::OutputItem;

/// pi's default interrupt budget: engine interrupt polls per execution.
pub const DEFAULT_INTERRUPT_BUDGET: u64 = 100_000;

type Execute =
    dyn Fn(Option<Value>) -> BoxFuture<'static, Result<Option<Value>, String>> + Send + Sync;

/// A script sandbox whose tools return script values directly.
///
/// ```
/// use pi_runtime::codemode::Sandbox;
/// use serde_json::json;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let sandbox = Sandbox::new().tool("add", "Add two numbers", |args| async move {
///     let args = args.unwrap_or_default();
///     let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
///     Ok(Some(json!(sum)))
/// });
/// let result = sandbox.execute("return await tools.add({ a: 2, b: 3 }) * 10;").await;
/// assert_eq!(result.value, Ok(Some(json!(50))));
///
/// let spin = sandbox.with_interrupt_budget(25).execute("while (true) {}").await;
/// assert_eq!(spin.value.unwrap_err().message, "Execution exceeded its interrupt budget of 25");
/// # });
/// ```
#[derive(Clone)]
pub struct Sandbox {
    tools: Vec<(ScriptTool, Arc<Execute>)>,
    interrupt_budget: u64,
    timeout_ms: Option<u64>,
    store: Map<String, Value>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self
            .tools
            .iter()
            .map(|(tool, _)| tool.name.as_str())
            .collect();
        f.debug_struct("Sandbox")
            .field("tools", &names)
            .field("interrupt_budget", &self.interrupt_budget)
            .field("timeout_ms", &self.timeout_ms)
            .finish_non_exhaustive()
    }
}

/// One output item of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SandboxOutput {
    /// From `text()`, `return`, or `console.*` (`console: true`).
    Text {
        /// The text.
        text: String,
        /// Whether `console.*` wrote it.
        console: bool,
    },
    /// From `image()`: base64 data and the detected type.
    Image {
        /// Base64 data.
        data: String,
        /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
        mime_type: String,
    },
}

/// What a script did.
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxResult {
    /// The returned value (`None` for `undefined`), or how the script failed.
    pub value: Result<Option<Value>, ScriptError>,
    /// The output, in order.
    pub output: Vec<SandboxOutput>,
    /// Each tool call, in start order: the tool's name and how it ended.
    pub calls: Vec<(String, CallStatus)>,
    /// A successful script's store writes.
    pub store_writes: Option<StoreEntry>,
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox::new()
    }
}

impl Sandbox {
    /// A sandbox with no tools, pi's interrupt budget and a time limit of
    /// [`DEFAULT_TIMEOUT_MS`].
    pub fn new() -> Self {
        Sandbox {
            tools: Vec::new(),
            interrupt_budget: DEFAULT_INTERRUPT_BUDGET,
            timeout_ms: Some(DEFAULT_TIMEOUT_MS),
            store: Map::new(),
        }
    }

    /// One more tool: `tools.<identifier>(args)` runs `execute` with the script's arguments
    /// (`None` without any) and resolves to its value, or rejects with its message.
    #[must_use]
    pub fn tool<F, Fut>(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        execute: F,
    ) -> Self
    where
        F: Fn(Option<Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Option<Value>, String>> + Send + 'static,
    {
        let name = name.into();
        let tool = ScriptTool {
            js_name: to_codemode_identifier(&name),
            sample: description.into(),
            name,
            sequential: false,
            description: String::new(),
            parameters: Value::Null,
            namespace: None,
        };
        let execute: Arc<Execute> = Arc::new(move |args| Box::pin(execute(args)));
        self.tools.push((tool, execute));
        self
    }

    /// Fail a script after this many interrupt polls (counted also every 50 promise jobs).
    #[must_use]
    pub fn with_interrupt_budget(mut self, polls: u64) -> Self {
        self.interrupt_budget = polls;
        self
    }

    /// Fail a script that runs longer than `ms` milliseconds ([`DEFAULT_TIMEOUT_MS`] by
    /// default).
    #[must_use]
    pub fn with_timeout_ms(mut self, ms: u64) -> Self {
        self.timeout_ms = Some(ms);
        self
    }

    /// The values `load(key)` reads.
    #[must_use]
    pub fn with_store(mut self, store: Map<String, Value>) -> Self {
        self.store = store;
        self
    }

    /// Run `code` (an async function body) in a fresh VM.
    pub async fn execute(&self, code: &str) -> SandboxResult {
        let host = Arc::new(FunctionHost {
            tools: self.tools.clone(),
        });
        let raw = run_script(
            ScriptRun {
                code: code.to_owned(),
                call_id: String::new(),
                tools: self.tools.iter().map(|(tool, _)| tool.clone()).collect(),
                store: self.store.clone(),
                timeout_ms: self.timeout_ms,
                interrupt_budget: Some(self.interrupt_budget),
                sequential: false,
                discovery: false,
                signal: CancellationToken::new(),
            },
            host,
        )
        .await;
        let RawResult {
            outcome,
            output,
            calls,
        } = raw;
        let (value, store_writes) = match outcome {
            Ok((value, writes)) => (
                Ok(value),
                Some(StoreEntry {
                    set: writes.set,
                    delete: writes.delete,
                }),
            ),
            Err(error) => (Err(error), None),
        };
        SandboxResult {
            value,
            output: output
                .into_iter()
                .map(|item| match item {
                    OutputItem::Text { text, console } => SandboxOutput::Text { text, console },
                    OutputItem::Image { data, mime_type } => {
                        SandboxOutput::Image { data, mime_type }
                    }
                })
                .collect(),
            calls: calls
                .into_iter()
                .map(|call| (call.name, call.status))
                .collect(),
            store_writes,
        }
    }
}

struct FunctionHost {
    tools: Vec<(ScriptTool, Arc<Execute>)>,
}

impl CallHost for FunctionHost {
    fn call(
        &self,
        tool: &ScriptTool,
        _number: u64,
        args: Option<Value>,
    ) -> BoxFuture<'static, CallOutcome> {
        let execute = self
            .tools
            .iter()
            .find(|(candidate, _)| candidate.name == tool.name)
            .map(|(_, execute)| Arc::clone(execute));
        let name = tool.name.clone();
        Box::pin(async move {
            let value = match execute {
                Some(execute) => execute(args).await,
                None => Err(format!("Unknown tool \"{name}\"")),
            };
            CallOutcome {
                id: None,
                failed: value.is_err(),
                error: None,
                value,
            }
        })
    }
}
