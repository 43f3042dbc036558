//! The `codemode` tool: its definition, and `execute`, which runs the script with the
//! conversation's callable tools and lays out the result the model sees.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::declarations::render_tool_sample;
use super::identifier::to_codemode_identifier;
use super::loadout::{
    CODEMODE_TOOL_NAME, CodemodeSettings, LoadoutTool, Namespace, PROMPT_GUIDELINE, PROMPT_SNIPPET,
    base_description, codemode_declaration, is_callable, prepare_loadout,
};
use super::output::{
    DEFAULT_MAX_OUTPUT_TOKENS, Files, Item, OutputFiles, TempOutputFiles, format_output,
    join_adjacent_text, save_images, truncate_output,
};
use super::runtime::{
    CallHost, CallOutcome, CallRecord, RawResult, ScriptRun, ScriptTool, StoreWrites, run_script,
};
use super::source::{DEFAULT_TIMEOUT_MS, SOURCE_GRAMMAR, parse_codemode_source};
use crate::message::{ContentBlock, ToolCall};
use crate::tool::{
    AgentTool, ConstrainedSampling, ExecutionMode, Exposure, GrammarVariants, RegisteredTools,
    RequestLoadout, Tool, ToolContext, ToolDefinition, ToolError, ToolResult, ToolSettings,
};

/// The values scripts keep across codemode calls with `store(key, value)` and read with
/// `load(key)`. Clones share the values. A successful script's writes are applied (and
/// logged as one [`StoreEntry`]); a failed script's are dropped.
///
/// ```
/// use pi_runtime::codemode::CodemodeStore;
/// use serde_json::json;
///
/// let store = CodemodeStore::new();
/// store.insert("user", json!({"id": 7}));
/// assert_eq!(store.get("user"), Some(json!({"id": 7})));
/// ```
#[derive(Debug, Clone, Default)]
pub struct CodemodeStore {
    inner: Arc<Mutex<StoreState>>,
}

#[derive(Debug, Default)]
struct StoreState {
    values: Map<String, Value>,
    entries: Vec<StoreEntry>,
}

/// One successful script's store writes (pi's `codemode-store` session entry).
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct StoreEntry {
    /// The keys set, with their values, in first-write order.
    pub set: Map<String, Value>,
    /// The keys deleted.
    pub delete: Vec<String>,
}

impl CodemodeStore {
    /// An empty store.
    pub fn new() -> Self {
        CodemodeStore::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, StoreState> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Set `key` as a script's `store(key, value)` would.
    pub fn insert(&self, key: impl Into<String>, value: Value) {
        self.state().values.insert(key.into(), value);
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.state().values.get(key).cloned()
    }

    /// Every key and value.
    pub fn values(&self) -> Map<String, Value> {
        self.state().values.clone()
    }

    /// The writes of each successful script that wrote, oldest first.
    pub fn entries(&self) -> Vec<StoreEntry> {
        self.state().entries.clone()
    }

    fn apply(&self, writes: StoreWrites) {
        if writes.set.is_empty() && writes.delete.is_empty() {
            return;
        }
        let mut state = self.state();
        for key in &writes.delete {
            state.values.remove(key);
        }
        for (key, value) in &writes.set {
            state.values.insert(key.clone(), value.clone());
        }
        state.entries.push(StoreEntry {
            set: writes.set,
            delete: writes.delete,
        });
    }
}

/// pi 1.6's `codemode` tool: the model writes JavaScript that calls the conversation's
/// callable tools (active `direct` ones, every `codemode` and `deferred` one), and only what the
/// script outputs reaches the model. Each call runs through the agent's own tool pipeline
/// ([`ToolContext::call_tool`]): validation, hooks, limits. The script runs in a fresh QuickJS
/// VM on its own thread, with no modules, timers or I/O.
///
///
/// Requests declare it with the description pi's loadout hook makes of the registered
/// tools (the tools scripts can call, within [`CodemodeSettings::inline_budget`]); in
/// [`CodemodeMode::On`](super::CodemodeMode::On) the other declared tools that scripts can
/// call say how, and in [`CodemodeMode::Only`](super::CodemodeMode::Only) requests leave out
/// the declarations of active `direct` tools ([`ToolDefinition::request_loadout`]).
///
/// ```
/// use pi_runtime::codemode::CodemodeTool;
/// use pi_runtime::{AgentTool, ToolDefinition};
///
/// let codemode = CodemodeTool::new();
/// assert_eq!(codemode.definition().name, "codemode");
/// assert_eq!(codemode.settings().exposure, pi_runtime::tool::Exposure::ModelOnly);
/// ```
#[derive(Clone)]
pub struct CodemodeTool {
    definition: Tool,
    settings: CodemodeSettings,
    store: CodemodeStore,
    files: Files,
    sequential: bool,
    interrupt_budget: Option<u64>,
    /// The time limit of scripts whose options line sets none.
    timeout_ms: u64,
    namespaces: Arc<HashMap<String, Namespace>>,
    /// The last loadout, with the registrations and active tools it was made for.
    loadout: Arc<Mutex<Option<LoadoutKey>>>,
}

/// A loadout and what it was made of: the registrations' revision and the active tools.
type LoadoutKey = (u64, Vec<String>, Arc<RequestLoadout>);

impl std::fmt::Debug for CodemodeTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodemodeTool")
            .field("store", &self.store)
            .field("sequential", &self.sequential)
            .finish_non_exhaustive()
    }
}

impl Default for CodemodeTool {
    fn default() -> Self {
        CodemodeTool::new()
    }
}

impl CodemodeTool {
    /// The tool with pi's defaults: no `models` API, a store of its own, outputs saved to the
    /// temporary folder.
    pub fn new() -> Self {
        CodemodeTool::with_settings(&CodemodeSettings::default())
    }

    /// The tool whose description follows `settings` (see [`base_description`]).
    pub fn with_settings(settings: &CodemodeSettings) -> Self {
        let parameters = json!({
            "type": "object",
            "required": ["code"],
            "properties": {"code": {"type": "string", "description": "Raw JavaScript source."}},
        });
        let definition = Tool::new(CODEMODE_TOOL_NAME, base_description(settings), parameters)
            .with_constrained_sampling(ConstrainedSampling::Grammar {
                variants: GrammarVariants {
                    openai_lark: Some(SOURCE_GRAMMAR.to_owned()),
                    openai_regex: None,
                },
            });
        CodemodeTool {
            definition,
            settings: settings.clone(),
            store: CodemodeStore::new(),
            files: Arc::new(TempOutputFiles::default()),
            sequential: false,
            interrupt_budget: None,
            timeout_ms: DEFAULT_TIMEOUT_MS,
            namespaces: Arc::default(),
            loadout: Arc::default(),
        }
    }

    /// Keep the scripts' `store()` values in `store` (shared with its clones).
    #[must_use]
    pub fn with_store(mut self, store: CodemodeStore) -> Self {
        self.store = store;
        self
    }

    /// Save cut outputs and images with `files` instead of to the temporary folder.
    #[must_use]
    pub fn with_output_files(mut self, files: impl OutputFiles) -> Self {
        self.files = Arc::new(files);
        self
    }

    /// Run nested calls one at a time, as an agent with `tool_execution(Sequential)` runs
    /// its own (pi: the session's tool execution).
    #[must_use]
    pub fn with_tool_execution(mut self, mode: ExecutionMode) -> Self {
        self.sequential = mode == ExecutionMode::Sequential;
        self
    }

    /// The time limit of scripts whose options line sets none ([`DEFAULT_TIMEOUT_MS`] by
    /// default): a longer one lets every script run that long; a script still sets its own
    /// with `// @options: {"timeout_ms": N}`.
    ///
    /// ```
    /// use pi_runtime::codemode::CodemodeTool;
    ///
    /// // Scripts that crunch data for up to ten minutes.
    /// let codemode = CodemodeTool::new().with_timeout_ms(600_000);
    /// # let _ = codemode;
    /// ```
    #[must_use]
    pub fn with_timeout_ms(mut self, ms: u64) -> Self {
        self.timeout_ms = ms;
        self
    }

    /// Put the tool `tool_name` in `namespace`, for `searchTools(query, { namespace })` and
    /// `describeNamespace(name)`.
    #[must_use]
    pub fn with_namespace(mut self, tool_name: impl Into<String>, namespace: Namespace) -> Self {
        Arc::make_mut(&mut self.namespaces).insert(tool_name.into(), namespace);
        // Namespaces change the description: this tool's loadouts are its own from here on.
        self.loadout = Arc::default();
        self
    }

    /// The loadout of `tools`, made again only when its registrations or active tools changed.
    fn loadout(&self, tools: &dyn RegisteredTools) -> Arc<RequestLoadout> {
        let declared: Vec<&str> = tools
            .active()
            .map(|tool| tool.definition().name.as_str())
            .collect();
        let mut cached = self.loadout.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((revision, active, loadout)) = &*cached
            && *revision == tools.revision()
            && *active == declared
        {
            return Arc::clone(loadout);
        }
        let registered: Vec<LoadoutTool> = tools
            .registered()
            .map(|(tool, settings)| {
                let definition = tool.definition();
                LoadoutTool {
                    name: definition.name.clone(),
                    description: definition.description.clone(),
                    parameters: Value::clone(&definition.parameters),
                    output_schema: tool.output_schema(),
                    exposure: settings.exposure,
                    active: tools.is_active(&definition.name),
                    namespace: self.namespaces.get(&definition.name).cloned(),
                    guidelines: (tool.prompt_guidelines().into_iter())
                        .map(Cow::into_owned)
                        .collect(),
                }
            })
            .collect();
        let made = prepare_loadout(&registered, &declared, &self.settings);
        let loadout = Arc::new(RequestLoadout {
            description: Some(made.description),
            descriptions: made.descriptions,
            hidden: made.hidden_declarations,
        });
        let active = declared.into_iter().map(str::to_owned).collect();
        *cached = Some((tools.revision(), active, Arc::clone(&loadout)));
        loadout
    }

    /// The store the scripts use.
    pub fn store(&self) -> &CodemodeStore {
        &self.store
    }

    async fn run(
        &self,
        call_id: String,
        params: Value,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let started = Instant::now();
        let code = params
            .get("code")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let source =
            parse_codemode_source(code).map_err(|error| ToolError::new(error.message()))?;
        let tools = callable_tools(&ctx, &self.namespaces);
        let script_tools: Vec<ScriptTool> = tools.iter().map(|tool| tool.script.clone()).collect();
        let host = Arc::new(PipelineHost {
            ctx: ctx.clone(),
            call_id: call_id.clone(),
            tools,
        });
        let raw = run_script(
            ScriptRun {
                code: source.code,
                call_id,
                tools: script_tools,
                store: self.store.values(),
                timeout_ms: Some(source.options.timeout_ms.unwrap_or(self.timeout_ms)),
                interrupt_budget: self.interrupt_budget,
                sequential: self.sequential,
                discovery: true,
                signal: ctx.signal().clone(),
            },
            host,
        )
        .await;
        let max_tokens = source
            .options
            .max_output_tokens
            .unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS);
        Ok(self.result(raw, max_tokens, started))
    }

    /// The result the model sees.
    fn result(&self, raw: RawResult, max_tokens: u64, started: Instant) -> ToolResult {
        let RawResult {
            outcome,
            mut output,
            calls,
        } = raw;
        let failed = outcome.is_err();
        let mut error_item = None;
        match outcome {
            Ok((value, writes)) => {
                self.store.apply(writes);
                if let Some(value) = value {
                    let text = match value {
                        Value::String(text) => text,
                        other => crate::js::js_json(&other),
                    };
                    output.push(super::vm::OutputItem::Text {
                        text,
                        console: false,
                    });
                }
            }
            Err(error) => {
                error_item = Some(format!(
                    "Script error:\n{}\n\n{}",
                    error.text(),
                    call_summary(&calls)
                ))
            }
        }
        let mut items = format_output(output);
        items.extend(error_item.map(Item::Text));
        let (items, full_output_path) =
            truncate_output(join_adjacent_text(items), max_tokens, self.files.as_ref());
        let items = join_adjacent_text(save_images(items, self.files.as_ref()));
        let header = format!(
            "{}\nWall time {} seconds\nOutput:\n",
            if failed {
                "Script failed"
            } else {
                "Script completed"
            },
            crate::js::js_to_fixed_1(started.elapsed().as_secs_f64()),
        );
        let mut content = vec![ContentBlock::text(header)];
        content.extend(items.into_iter().map(|item| match item {
            Item::Text(text) => ContentBlock::text(text),
            Item::Image { data, mime_type } => ContentBlock::image(data, mime_type),
        }));
        let mut details = json!({"calls": calls});
        if let Some(path) = full_output_path {
            details["fullOutputPath"] = Value::String(path);
        }
        ToolResult::new(content)
            .with_details(details)
            .with_is_error(failed)
    }
}

fn call_summary(calls: &[CallRecord]) -> String {
    if calls.is_empty() {
        return "No tool calls were made.".to_owned();
    }
    let made: Vec<String> = calls
        .iter()
        .map(|call| format!("{} ({})", call.name, status_name(call)))
        .collect();
    format!(
        "Tool calls made before the failure (they are not undone): {}",
        made.join(", ")
    )
}

fn status_name(call: &CallRecord) -> &'static str {
    match call.status {
        super::runtime::CallStatus::Running => "running",
        super::runtime::CallStatus::Ok => "ok",
        super::runtime::CallStatus::Error => "error",
        super::runtime::CallStatus::Cancelled => "cancelled",
    }
}

/// A tool a script can call, with what its results become.
struct Callable {
    script: ScriptTool,
    has_output_schema: bool,
}

/// The conversation's callable tools, in registration order.
fn callable_tools(ctx: &ToolContext, namespaces: &HashMap<String, Namespace>) -> Vec<Callable> {
    let Some(tools) = ctx.tools() else {
        return Vec::new();
    };
    let registry = tools.registry();
    registry
        .registered()
        .filter(|(tool, settings)| {
            let name = &tool.definition().name;
            is_callable(name, settings.exposure, registry.is_active(name))
        })
        .map(|(tool, _)| {
            let definition = tool.definition();
            let output_schema = tool.output_schema();
            let guidelines: Vec<String> = tool
                .prompt_guidelines()
                .into_iter()
                .map(Cow::into_owned)
                .collect();
            let declaration = codemode_declaration(
                &definition.name,
                &definition.description,
                &definition.parameters,
                output_schema.as_ref(),
                &guidelines,
            );
            Callable {
                script: ScriptTool {
                    name: definition.name.clone(),
                    js_name: to_codemode_identifier(&definition.name),
                    sample: render_tool_sample(&declaration),
                    sequential: tool.execution_mode() == ExecutionMode::Sequential,
                    description: definition.description.clone(),
                    parameters: Value::clone(&definition.parameters),
                    namespace: namespaces.get(&definition.name).cloned(),
                },
                has_output_schema: output_schema.is_some(),
            }
        })
        .collect()
}

/// Runs nested calls through the agent's pipeline.
struct PipelineHost {
    ctx: ToolContext,
    call_id: String,
    tools: Vec<Callable>,
}

impl CallHost for PipelineHost {
    fn call(
        &self,
        tool: &ScriptTool,
        number: u64,
        args: Option<Value>,
    ) -> BoxFuture<'static, CallOutcome> {
        let id = format!("{}/{number}", self.call_id);
        let arguments = match args {
            None | Some(Value::Null) => json!({}),
            Some(args) => args,
        };
        let name = tool.name.clone();
        let structured = self
            .tools
            .iter()
            .any(|callable| callable.script.name == name && callable.has_output_schema);
        let ctx = self.ctx.clone();
        Box::pin(async move {
            let result = ctx
                .call_tool(ToolCall::new(id.clone(), name.clone(), arguments))
                .await;
            let text = result.text_content();
            let failure = if text.is_empty() {
                format!("Tool \"{name}\" failed")
            } else {
                text.clone()
            };
            let error = result.is_error.then(|| failure.clone());
            let value = match result.structured_content {
                Some(content) if structured => Ok(Some(content)),
                _ if result.is_error => Err(failure),
                _ => Ok(Some(Value::String(text))),
            };
            CallOutcome {
                id: Some(id),
                value,
                failed: result.is_error,
                error,
            }
        })
    }

    /// `tool_execution_update` with no content and the records as `details.calls`, as pi's
    /// `onUpdate`, so a viewer shows the nested calls while the script runs.
    fn progress(&self, calls: &[CallRecord]) {
        let details = json!({ "calls": calls });
        self.ctx
            .update(ToolResult::new(Vec::new()).with_details(details));
    }
}

impl AgentTool for CodemodeTool {
    fn definition(&self) -> &Tool {
        &self.definition
    }

    fn execute(
        &self,
        call_id: String,
        params: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'_, Result<ToolResult, ToolError>> {
        Box::pin(self.run(call_id, params, ctx))
    }
}

impl ToolDefinition for CodemodeTool {
    fn prompt_snippet(&self) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed(PROMPT_SNIPPET))
    }

    fn prompt_guidelines(&self) -> Vec<Cow<'_, str>> {
        vec![Cow::Borrowed(PROMPT_GUIDELINE)]
    }

    /// Model-only: scripts must not start other scripts.
    fn settings(&self) -> &ToolSettings {
        static SETTINGS: ToolSettings = ToolSettings::new().with_exposure(Exposure::ModelOnly);
        &SETTINGS
    }

    /// The description listing the tools scripts can call, and the notes on (or the hiding
    /// of) the other declared tools scripts can call.
    fn request_loadout(&self, tools: &dyn RegisteredTools) -> Option<Arc<RequestLoadout>> {
        Some(self.loadout(tools))
    }
}
