//! Give an LLM agent tools.
//!
//! Write an ordinary `async fn`, put [`#[tool]`](macro@tool) on it, register it in one call;
//! the runtime does the rest: the JSON Schema the model sees, argument coercion and
//! validation with errors the model can correct itself from, hooks, parallel execution,
//! streaming, and the wire formats of the big providers.
//!
//! ```
//! use pi_runtime::{AgentTool, ToolContext, ToolError, ToolRegistry, tool};
//! use serde_json::json;
//!
//! /// Execute a bash command in the working directory.
//! #[tool(snippet = "Execute bash commands (ls, grep, find, etc.)", mode = "sequential")]
//! async fn bash(
//!     /// Bash command to execute
//!     command: String,
//!     /// Timeout in seconds (optional, no default timeout)
//!     timeout: Option<f64>,
//!     ctx: ToolContext,
//! ) -> Result<String, ToolError> {
//!     if ctx.is_cancelled() {
//!         return Err(ToolError::new("Command aborted"));
//!     }
//!     Ok(format!("ran `{command}` (timeout {timeout:?})"))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The schema the model sees, generated once from the parameters.
//! assert_eq!(
//!     *Bash.definition().parameters,
//!     json!({
//!         "type": "object",
//!         "properties": {
//!             "command": {"type": "string", "description": "Bash command to execute"},
//!             "timeout": {"type": "number",
//!                         "description": "Timeout in seconds (optional, no default timeout)"}
//!         },
//!         "required": ["command"],
//!         "additionalProperties": false
//!     })
//! );
//!
//! // Register tools of different types in one call (a tuple, a `Vec`, or one tool).
//! let registry = ToolRegistry::new((Bash,))?;
//! let bash = registry.get("bash").expect("registered");
//!
//! // The agent loop validates the arguments, then calls `execute`; so can you.
//! let result = bash
//!     .execute("call-1".into(), json!({"command": "ls"}), ToolContext::detached("call-1"))
//!     .await
//!     .map_err(ToolError::into_message)?;
//! assert_eq!(result.text_content(), "ran `ls` (timeout None)");
//! # Ok(())
//! # }
//! ```
//!
//! ## The tool layers, in one screen
//!
//! The names follow pi's, which the providers' own vocabulary shaped; each layer adds one
//! thing to the one before:
//!
//! | name | kind | what it is |
//! |---|---|---|
//! | [`Tool`] | struct | what a model request declares: name, description, JSON Schema |
//! | [`AgentTool`] | trait | a `Tool` that executes: `execute(call_id, args, ctx)` |
//! | [`ToolDefinition`] | trait | an `AgentTool` with what the agent needs around it: prompt snippet and guidelines, output schema, and its [`tool::ToolSettings`] (exposure, approval, hints, execution policy, context type); what `#[tool]` generates and registries hold |
//! | [`FnTool`] | struct | a `ToolDefinition` made at run time from a closure |
//! | [`ToolSet`] | trait | anything that registers as tools in one call: a tool, a tuple, a `Vec`; each tool as a [`tool::Registration`], whose settings may override the tool's |
//! | [`ToolRegistry`] | struct | registered tools by name, with the active subset |
//! | [`ToolResult`] / [`ToolError`] | structs | what `execute` returns |
//! | [`ToolContext`] | struct | what a running tool gets besides its arguments: call id, cancellation, progress |
//! | [`agent::Hooks`] | struct | what an application decides around each call and turn |
//! | [`agent::AgentDefinition`] | struct | model, tools, hooks and settings, shared by many conversations |
//! | [`Agent`] | struct | one conversation of a definition: transcript, queues, runs |
//! | [`agent::RunState`] | struct | a run in progress, as data that resumes (saved signed) |
//!
//! Every tool call, whoever makes it (the loop, [`Agent::run_tool_call`], an MCP client of
//! an `mcp::McpServer`), takes the same path: lookup among the turn's tools,
//! `prepare_arguments`, validation, `before_tool_call`, `execute`, `after_tool_call`.
//!
//! ## Running an agent
//!
//! Register tools in one builder call, give the agent a model, prompt it. The faux model
//! below replays a script (one invalid call, the corrected call, a final answer), so this
//! runs offline; swap in a real provider from [`provider::presets`] to talk to a server
//! (for OpenAI, [`presets::openai`](provider::presets::openai) speaks the Responses API,
//! where a reasoning model keeps its reasoning across tool calls;
//! [`presets::openai_completions`](provider::presets::openai_completions) speaks Chat
//! Completions, for DeepSeek and every compatible server; see
//! [`presets`](provider::presets#openai-responses-or-chat-completions)).
//!
//! ```
//! use pi_runtime::agent::Agent;
//! use pi_runtime::provider::faux::{FauxModel, FauxResponse};
//! use pi_runtime::{Message, tool};
//! use serde_json::json;
//!
//! /// Add two numbers.
//! #[tool(snippet = "Add two numbers")]
//! async fn add(a: f64, b: f64) -> String {
//!     (a + b).to_string()
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let model = FauxModel::new()
//!     .respond(FauxResponse::tool_call("c1", "add", json!({"a": 1, "b": "x"})))
//!     .respond(FauxResponse::tool_call("c2", "add", json!({"a": 1, "b": 2})))
//!     .respond(FauxResponse::text("1 + 2 = 3"));
//! let agent = Agent::builder().model(model).tools((Add,)).build()?;
//!
//! let new_messages = agent.prompt("What is 1 + 2?").await?;
//! let results: Vec<String> = new_messages
//!     .iter()
//!     .filter_map(|m| match m {
//!         Message::ToolResult(r) => Some(r.text()),
//!         _ => None,
//!     })
//!     .collect();
//! // The model saw exactly what was wrong, corrected itself, and got its answer.
//! assert_eq!(
//!     results,
//!     [
//!         "Validation failed for tool \"add\":\n  - b: expected number, got string\n\n\
//!          Received arguments:\n{\n  \"a\": 1,\n  \"b\": \"x\"\n}",
//!         "3",
//!     ]
//! );
//! # Ok(())
//! # }
//! ```
//!
//! The agent loop, its builder, hooks (`before_tool_call`, `after_tool_call`,
//! `finish_turn`), events and state live in [`agent`]. Anything that implements [`ToolSet`]
//! (one tool, a tuple of tools, a `Vec<Arc<dyn ToolDefinition>>`) registers in one call.
//!
//! ## Structured results in one call
//!
//! The most common reason to give a model a tool is to get back a value the program can
//! trust. [`extract::<T>()`](agent::AgentBuilder::extract) builds a submit tool from `T`'s
//! schema and returns the value it accepted: arguments are validated as for every tool (the
//! model reads the error and retries), a business check may refuse a value, one value is
//! accepted per task and ends the run, and the turn and time limits hold.
//!
//! ```
//! use pi_runtime::agent::Agent;
//! use pi_runtime::agent::extract::ExtractError;
//! use pi_runtime::provider::faux::{FauxModel, FauxResponse};
//! use pi_runtime::{Message, tool_args};
//! use serde_json::json;
//!
//! /// The final analysis of one function.
//! #[tool_args]
//! pub struct FunctionAnalysis {
//!     /// The function's name.
//!     pub name: String,
//!     /// A verbatim quote from the source backing the analysis.
//!     pub evidence: String,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! const SOURCE: &str = "function first(items) { return items[0] }";
//! let model = FauxModel::new()
//!     .respond(FauxResponse::tool_call("c1", "submit_analysis", json!({"name": "first", "evidence": 42})))
//!     .respond(FauxResponse::tool_call("c2", "submit_analysis", json!({"name": "first", "evidence": "return items[0]"})));
//! let extractor = Agent::builder()
//!     .model(model)
//!     .system_prompt("Hand in your analysis with submit_analysis.")
//!     .extract::<FunctionAnalysis>()
//!     .tool_name("submit_analysis")
//!     .check(|analysis: &FunctionAnalysis| match SOURCE.contains(analysis.evidence.as_str()) {
//!         true => Ok(()),
//!         false => Err("the evidence must be a quote from the source"),
//!     })
//!     .build()?;
//!
//! let extracted = extractor.extract(format!("Analyse: {SOURCE}")).await?;
//! assert_eq!(extracted.value.evidence, "return items[0]");
//! let Message::ToolResult(rejected) = &extracted.messages[2] else { unreachable!() };
//! assert!(rejected.text().contains("  - evidence: expected string, got number"));
//!
//! // A model that answers in prose gets no result, as a typed error.
//! let prose = FauxModel::new().respond(FauxResponse::text(r#"{"name": "first"}"#));
//! let extractor = Agent::builder().model(prose).extract::<FunctionAnalysis>().build()?;
//! assert!(matches!(
//!     extractor.extract("Analyse.").await,
//!     Err(ExtractError::NoSubmission { turns: 1, .. })
//! ));
//! # Ok(())
//! # }
//! ```
//!
//! The rules (accepted once, `terminate`, the limits, forcing the tool per provider, watching
//! the partial result as it streams, every outcome) are in [`agent::extract`].
//!
//! ### The same by hand
//!
//! Underneath is an ordinary tool, and this is the pattern to write when you need something
//! the extractor does not do: a tool holding the task's slot in a [`State`], accepting once
//! and asking to `terminate`, sequential so two submissions cannot race, a turn limit, a
//! time limit, and after the run two checks: the run ended as a run should (not at a limit,
//! an error or an abort), and something was accepted.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use std::time::Duration;
//!
//! use pi_runtime::agent::Agent;
//! use pi_runtime::provider::faux::{FauxModel, FauxResponse};
//! use pi_runtime::{Args, State, ToolError, ToolResult, tool, tool_args};
//! use serde_json::json;
//!
//! /// The final analysis of one function.
//! #[tool_args]
//! pub struct FunctionAnalysis {
//!     /// The function's name.
//!     pub name: String,
//! }
//!
//! /// Submit the final analysis; only one valid result is accepted.
//! #[tool(strict = "prefer", mode = "sequential")]
//! async fn submit_analysis(
//!     State(slot): State<Arc<Mutex<Option<FunctionAnalysis>>>>,
//!     Args(analysis): Args<FunctionAnalysis>,
//! ) -> Result<ToolResult, ToolError> {
//!     let mut slot = slot.lock().unwrap();
//!     if slot.is_some() {
//!         return Err(ToolError::new("already accepted"));
//!     }
//!     *slot = Some(analysis);
//!     Ok(ToolResult::text("accepted").with_terminate(true))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let model = FauxModel::new()
//!     .respond(FauxResponse::tool_call("c1", "submit_analysis", json!({"name": "first"})));
//! let slot = Arc::new(Mutex::new(None));
//! let agent = Agent::builder()
//!     .model(model)
//!     .tools(SubmitAnalysis::new(Arc::clone(&slot)))
//!     .max_turns(4)
//!     .time_limit(Duration::from_secs(30))
//!     .build()?;
//!
//! let run = agent.prompt("Analyse `first`.").await?;
//! if !run.end.is_success() {
//!     return Err(format!("the run did not finish: {:?}", run.end).into());
//! }
//! let analysis = slot.lock().unwrap().take().ok_or("no validated submission received")?;
//! assert_eq!(analysis.name, "first");
//! # Ok(())
//! # }
//! ```
//!
//! # `#[tool]`
//!
//! `#[tool]` goes on a free `async fn`. The fn stays as written and callable directly; next
//! to it the attribute generates, for `async fn read_file(...)`:
//!
//! | item | what it is |
//! |---|---|
//! | `ReadFileParams` | a struct with one field per plain parameter, implementing `Deserialize` and `JsonSchema` as serde's and schemars' derives would (absent with `Args<T>`) |
//! | `ReadFile` | the tool: a unit struct, or a struct holding the state with `ReadFile::new(state)`; implements [`AgentTool`], [`ToolDefinition`] (its [`settings`](ToolDefinition::settings) from the attribute and, for the [`context_type`](tool::ToolSettings::context_type), from its extractors) and [`tool::ContextTools`] (its `Ctx<T>`, checked by [`AgentBuilder::context_tools`](agent::AgentBuilder::context_tools)) |
//! | `ReadFile::NAME`, `ReadFile::DESCRIPTION` | the name the model calls and the description it reads |
//!
//! When a type of yours already has the name (`fn report` next to your `struct Report`),
//! name the tool type with `#[tool(type_name = "ReportTool")]`; the argument struct is then
//! `ReportToolParams`. Without it the collision is reported as ``#[tool]` cannot name its
//! tool type `Report`: your code has another item named `Report``, with that key.
//!
//! The [`Tool`] definition (name, description, schema, constrained sampling) is built once,
//! on first use, and the registry compiles its schema when the tool is registered.
//!
//! ## Capabilities
//!
//! Each is one line here and a module of its own:
//!
//! - **Approvals**: calls a person approves before they run; the run pauses, its signed
//!   state goes to storage, and a resume in any process runs the approved calls
//!   ([`agent::approval`]).
//! - **Agents as tools**: an agent definition is a tool whose calls run it as a sub-agent,
//!   its events nested in the parent's, approvals anywhere in the tree pausing the whole run
//!   ([`agent::subagent`]); handoffs to another agent ([`agent::handoff`]); input and output
//!   guardrails ([`agent::guardrail`]).
//! - **Durable runs**: a run as a Restate workflow whose every model response and tool
//!   execution is a journal step, so a crash resumes it without repeating a finished call
//!   (`pi_runtime::durable`, feature `restate`).
//! - **Code mode**: the model writes one JavaScript program that calls many tools, run in
//!   an embedded QuickJS sandbox with time and memory limits (`pi_runtime::codemode`,
//!   feature `codemode`).
//! - **Tool search**: hundreds of tools declared on demand; the model searches them by
//!   words and loads what it needs ([`tool_search`]).
//! - **Policies**: a call's timeout, retry budget, named concurrency limits and output cap,
//!   per tool or for the agent ([`tool::ToolPolicy`]).
//! - **Per-run context**: a value each run supplies and its tools read as [`Ctx<T>`] (or
//!   through an extractor of yours, [`FromToolContext`]), checked against the tools at
//!   compile time ([`AgentBuilder::context_tools`](agent::AgentBuilder::context_tools)).
//! - **MCP**: serve any [`ToolSet`] to MCP clients over stdio or authenticated streamable
//!   HTTP that scales out, and give an MCP server's tools to the agent (`pi_runtime::mcp`,
//!   feature `mcp`).
//!
//! The common names are in one import: [`prelude`].
//!
//! ## Cargo features
//!
//! | feature | default | brings |
//! |---|---|---|
//! | `openai` | yes | [`provider::openai`]: OpenAI Chat Completions, DeepSeek, compatible servers |
//! | `openai-responses` | yes | [`provider::openai_responses`]: the OpenAI Responses API, which [`provider::presets::openai`] speaks |
//! | `anthropic` | yes | [`provider::anthropic`]: Anthropic Messages |
//! | `google` | yes | [`provider::google`]: Google Gemini |
//! | `http` | with any provider | [`provider::http::HttpModel`], [`provider::presets`], SSE, retries, deadlines |
//! | `tools` | yes | [`tools`]: `read`, `write`, `edit`, `bash` and the file mutation queue |
//! | `icu-segmenter` | yes | ICU word segmentation (ICU4C's rules and CJK engine over ICU4X's data) in [`tool_search`]: Chinese, Japanese, Korean and Thai text splits into words as pi splits it; without it, such text splits at spaces only |
//! | `mcp` | no | `pi_runtime::mcp`: serve any [`ToolSet`] to MCP clients (stdio, streamable HTTP), and give an MCP server's tools to the agent, on rmcp (the official Rust SDK) and axum |
//! | `codemode` | no | `pi_runtime::codemode`: pi's `codemode` tool, where the model writes one JavaScript program that calls many tools, run in an embedded QuickJS (rquickjs) |
//! | `jwt` | no | JWT access tokens for the MCP server (`pi_runtime::mcp::auth::JwtVerifier`), checked against a JWKS from a URL or a fixed key set; enables `mcp` |
//! | `restate` | no | `pi_runtime::durable`: an agent's run as a Restate workflow, each model response and tool execution a step of its journal, so a crash anywhere resumes it |
//!
//! Without default features the crate is the macro, the tool layers, the argument pipeline,
//! streaming JSON ([`json`]), the agent loop ([`agent`]), tool search ([`tool_search`]) and
//! the faux model ([`provider::faux`]): no HTTP stack, no `nix`, no ICU. Implement [`LanguageModel`] for your own
//! model by driving a [`stream::MessageWriter`].
//!
//! ## Attribute keys
//!
//! | key | type | default | meaning |
//! |---|---|---|---|
//! | `name` | string | the fn's name | the name the model calls; must match `^[a-zA-Z0-9_-]{1,64}$` (checked at compile time) |
//! | `type_name` | string | the fn's name in `UpperCamelCase` | the generated tool type (`ReportTool`, and `ReportToolParams` for the arguments), for when a type of yours has the default name; a Rust identifier |
//! | `label` | string | the name | a name for UIs ([`AgentTool::label`]) |
//! | `description` | string | the fn's doc comment | what the model reads; wins over the doc comment. A tool without either does not compile |
//! | `snippet` | string | none | one line for the system prompt's `Available tools:` list; a tool without one is not listed there but is still sent to the provider |
//! | `guidelines` | list of strings | `[]` | bullets for the system prompt's `Guidelines:` section |
//! | `mode` | `"sequential"` or `"parallel"` | `"parallel"` | [`ExecutionMode`]: a sequential tool makes its whole batch run one call at a time |
//! | `exposure` | `"direct"`, `"deferred"`, `"codemode"`, `"model-only"` or `"hidden"` | `"direct"` | [`Exposure`](tool::Exposure): declared to the model from registration, or only once activated (for example by a `tool_search` match) |
//! | `strict` | `"prefer"` or `"require"` | none | constrained sampling, [`ConstrainedSampling::JsonSchema`]: strict where the provider allows it, or strict or the request fails |
//! | `prepare` | path to a fn | none | a shape shim run before validation: `fn(&Value) -> Result<Cow<'_, Value>, ToolError>`, returning `Cow::Borrowed` when nothing changed; runs after the aliases are renamed |
//! | `approval` | `"always"` or path to a fn | none | whether a call needs a person's approval before it executes ([`ToolSettings::approval`](tool::ToolSettings::approval)): always, or when `fn(&Params) -> Approval` says so from the validated arguments (`Params` is the generated `…ToolParams` or the `T` of `Args<T>`); see [`agent::approval`] |
//! | `closed` | bool | `true` | `"additionalProperties": false` on every object schema (an extra key is reported to the model as an unknown field); `false` leaves objects open, like pi's built-in tools |
//! | `timeout` | duration string: `"250ms"`, `"30s"`, `"2m"`, `"1h"` | none | the call's signal is cancelled when it runs longer; the model gets `Tool "x" timed out after 30s`, with the tool's result if it ended within a second, else saying it may still be running ([`ToolPolicy`](tool::ToolPolicy)) |
//! | `retries` | whole number | none | failed calls (invalid arguments, [`ToolError::retry`]) of the tool in one run, by the model or nested in other tools; one more ends the run with [`RunEnd::RetriesExhausted`](agent::RunEnd::RetriesExhausted) |
//! | `concurrency` | `"name:permits"` | none | at most `permits` calls of every tool naming the limit run at once |
//! | `max_output` | size string: `"4096"`, `"64KB"`, `"64KiB"`, `"1MiB"` | none | a longer text result is cut in pi's truncation format, the full text saved to a file the result names |
//! | `crate` | string | `"::pi_runtime"` | the path of this crate, for crates that re-export it under another name |
//!
//! On a parameter, `#[tool(...)]` takes:
//!
//! | key | type | default | meaning |
//! |---|---|---|---|
//! | `alias` | string or list of strings | none | old names of a plain argument the model may still send, renamed before validation |
//! | `extract` | flag | absent | the parameter is built from the call by [`FromToolContext`], not sent by the model (implied for `ToolContext` and `Ctx<T>`) |
//!
//! ## Parameters
//!
//! - **`name: Type`**: one argument, in parameter order. `Type` is any
//!   `DeserializeOwned + JsonSchema` type; derive both on your own types with
//!   [`#[tool_args]`](macro@tool_args). The parameter's `///` doc comment is the property's
//!   description; `Option<T>` is an optional property with `T`'s schema (the model omits it;
//!   an explicit `null` is dropped by coercion, and for `Option<Vec<T>>` a single value is
//!   wrapped into a one-item array). The same rule holds for `Option<T>` fields of
//!   [`#[tool_args]`](macro@tool_args) types. Arguments are owned: a borrowed type (`&str`,
//!   `&[T]`) is a compile error that names the owned type to write (`String`, `Vec<T>`).
//! - **`#[serde(...)]`, `#[schemars(...)]`** on a parameter pass through to its field, e.g.
//!   `#[serde(default)]` (optional, with a default) or `#[schemars(range(min = 1))]`.
//! - **`#[tool(alias = "filePath")]`** (or `alias = ["filePath", "file"]`) declares an old name
//!   the model may still send: the generated `prepare_arguments` renames it before
//!   validation. The transcript keeps the model's raw arguments, and arguments without an old
//!   name are passed on borrowed, without a copy.
//! - **`State(state): State<S>`**: data the tool value holds; the tool type becomes
//!   `MyTool::new(state)` and each call gets a clone ([`State`]).
//! - **`Args(value): Args<T>`**: every argument as one type `T`, instead of plain
//!   parameters ([`Args`]); its schema is `T`'s.
//! - **Extractors**, in any position: values built from the call rather than sent by the
//!   model, by [`FromToolContext`] (like axum's `FromRequestParts`): **`ctx: ToolContext`**
//!   (the call id, the run's cancellation signal, progress updates), **`Ctx(value): Ctx<T>`**
//!   (the run's context, [`Ctx`]), and **`#[tool(extract)] value: T`** for any other
//!   `T: FromToolContext`: a type of yours, or an alias of `Ctx<T>`. An extractor's
//!   rejection is the call's error result; its
//!   [`context_type`](FromToolContext::context_type) is checked by the agent like a `Ctx<T>`'s.
//!
//! How the macro tells them apart: by the spelling of the type only where the spelling
//! shapes what it generates, `Args<T>` (the schema) and `State<S>` (the tool type's field);
//! by the mark `#[tool(extract)]` for extractors, since whether a type implements a trait is
//! not known to a macro. `ToolContext` (no generic arguments) and `Ctx<T>` (one type
//! argument) are extractors without the mark, by their spelling. Every other parameter is a
//! plain argument, a type of yours named `State` or `Ctx` of another shape included. A
//! parameter whose type does not fit what its spelling or mark says is a compile error at
//! that type:
//!
//! ```compile_fail
//! # use pi_runtime::tool;
//! struct Tenant;
//!
//! /// An extractor parameter of a type that is none.
//! #[tool]
//! async fn whoami(#[tool(extract)] tenant: Tenant) -> String { String::new() }
//! // error[E0277]: `Tenant` cannot be taken from the call: it does not implement `FromToolContext`
//! ```
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicBool, Ordering};
//! use pi_runtime::{Args, State, ToolError, ToolResult, tool, tool_args};
//!
//! /// The final analysis of one function.
//! #[tool_args]
//! pub struct FunctionAnalysis {
//!     /// The function's name.
//!     pub name: String,
//!     /// A quote from the source backing the analysis.
//!     pub evidence: String,
//! }
//!
//! /// Submit the final analysis of the current function; only one valid result is accepted.
//! #[tool(strict = "prefer", mode = "sequential")]
//! async fn submit_analysis(
//!     State(accepted): State<Arc<AtomicBool>>,
//!     Args(analysis): Args<FunctionAnalysis>,
//! ) -> Result<ToolResult, ToolError> {
//!     if accepted.swap(true, Ordering::SeqCst) {
//!         return Err(ToolError::new("already accepted"));
//!     }
//!     Ok(ToolResult::text(format!("accepted {}", analysis.name)).with_terminate(true))
//! }
//!
//! let tool = SubmitAnalysis::new(Arc::new(AtomicBool::new(false)));
//! # let _ = tool;
//! ```
//!
//! ## Return types
//!
//! The fn returns anything that converts into a [`ToolResult`] ([`IntoToolResult`]):
//! `String`, `&'static str`, `()`, [`ToolResult`] itself, `Vec<ContentBlock>`, a number or
//! `bool` (the model sees `3` for `1.0 + 2.0`), `serde_json::Value`, or [`Json<T>`]
//! for `T: Serialize` (the model sees compact JSON, `details` gets the value; derive it with
//! `#[tool_args(serialize)]`); or a
//! `Result` of one of those and any `E: Display`, whose `Err` becomes an error result with
//! that text (the model sees it and may retry).
//!
//! ## Doc comments
//!
//! One rule, for the tool description and every parameter description: every `#[doc]` line
//! in order (`///` lines, `#[doc = include_str!(...)]`, `#[doc = concat!(...)]`), one
//! leading space stripped from each, joined with `\n`, the whole trimmed.
//!
//! ## The schema
//!
//! Generated with schemars: root `"type": "object"`, `properties` in parameter order,
//! `required` always present (`[]` when nothing is required), descriptions last in each
//! node, nested types inline (no `$defs`, which strict mode rejects), no `$schema`, no root
//! `title` or `description` (the tool has its own), no schemars `format` annotations for Rust
//! number types (`int32`, `double`, ...). Objects are closed unless `closed = false`.
//! A unit enum is `{"type": "string", "enum": [...]}`; when its variants have doc comments,
//! each becomes a line `- "value": doc` of the description (schemars would write a `oneOf`,
//! which strict mode rejects and whose failure names only its first value), so a wrong value
//! reads `units: expected one of ["metric","imperial"]`.
//!
//! ## Mistakes are compile errors
//!
//! Every mistake is an error on the offending token that says what to write instead, and one
//! compile reports every independent mistake.
//!
//! ```compile_fail
//! # use pi_runtime::tool;
//! /// Not async.
//! #[tool]
//! fn add(a: i64, b: i64) -> String { (a + b).to_string() }
//! // error: `#[tool]` needs an `async fn`: write `async fn`
//! ```
//!
//! ```compile_fail
//! # use pi_runtime::tool;
//! /// A misspelled mode.
//! #[tool(mode = "sequental")]
//! async fn add(a: i64, b: i64) -> String { (a + b).to_string() }
//! // error: unknown execution mode `sequental`: write `mode = "sequential"` or `mode = "parallel"`
//! ```
//!
//! ```compile_fail
//! # use pi_runtime::tool;
//! #[tool]
//! async fn add(a: i64, b: i64) -> String { (a + b).to_string() }
//! // error: a tool needs a description for the model: add a `///` doc comment to the fn, or
//! // write `#[tool(description = "...")]`
//! ```
//!
//! ```compile_fail
//! # use pi_runtime::tool;
//! struct Point { x: f64 }
//!
//! /// A parameter type without `Deserialize` and `JsonSchema`.
//! #[tool]
//! async fn plot(point: Point) -> String { point.x.to_string() }
//! // error: `Point` cannot be a tool parameter: it does not implement `serde::Deserialize`
//! //   = note: derive it: put `#[pi_runtime::tool_args]` on the type ...
//! ```
//!
//! ```compile_fail
//! # use pi_runtime::{Args, tool, tool_args};
//! #[tool_args]
//! struct Analysis { name: String }
//!
//! /// `Args<T>` next to a plain parameter.
//! #[tool]
//! async fn submit(Args(a): Args<Analysis>, extra: String) -> String { a.name + &extra }
//! // error: `Args<Analysis>` already holds all of the tool's arguments: move this parameter
//! // into `Analysis` as a field, or replace `Args<Analysis>` with one parameter per field
//! ```
//!
//! ```compile_fail
//! # use pi_runtime::tool;
//! /// A borrowed parameter.
//! #[tool]
//! async fn echo(text: &str) -> String { text.to_owned() }
//! // error: a tool argument cannot borrow: the model's arguments are deserialized into owned
//! // values; write `String` instead of `&str`
//! ```
//!
//! ```compile_fail
//! # use pi_runtime::tool;
//! pub struct Report { pub title: String }
//!
//! /// A tool whose type name, `Report`, is taken.
//! #[tool]
//! async fn report(title: String) -> String { title }
//! // error[E0428]: the name `Report` is defined multiple times
//! // error: `#[tool]` cannot name its tool type `Report`: your code has another item named `Report`
//! //   = note: name the tool type yourself: `#[tool(type_name = "ReportTool")]` ...
//! ```
//!
//! # `#[tool_args]`
//!
//! Derives `Deserialize` and `JsonSchema` on your own argument types through this crate's
//! serde and schemars, so your crate needs neither as a dependency; the type's own
//! `#[serde(...)]` and `#[schemars(...)]` attributes keep working. `#[tool_args(serialize)]`
//! also derives `Serialize`, for types returned inside [`Json`]. A named field of type
//! `Option<T>` is an optional property with `T`'s schema, as a `#[tool]` parameter is (a
//! field with its own `#[schemars(with)]` or `#[serde(with | deserialize_with | flatten)]`
//! keeps schemars' `T | null`).
//!
//! ```
//! use pi_runtime::{Json, tool, tool_args};
//!
//! /// One targeted replacement.
//! #[tool_args]
//! #[serde(rename_all = "camelCase")]
//! pub struct Replacement {
//!     /// Exact text to replace.
//!     pub old_text: String,
//!     /// Replacement text.
//!     pub new_text: String,
//! }
//!
//! /// What an edit did.
//! #[tool_args(serialize)]
//! pub struct EditReport {
//!     /// Replacements applied.
//!     pub applied: usize,
//! }
//!
//! /// Apply replacements to a file.
//! #[tool]
//! async fn edit(
//!     /// Path to the file to edit
//!     path: String,
//!     /// One or more targeted replacements.
//!     edits: Vec<Replacement>,
//! ) -> Json<EditReport> {
//!     let _ = path;
//!     Json(EditReport { applied: edits.len() })
//! }
//! ```
//!
#![cfg_attr(not(test), warn(clippy::unwrap_used))]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod aborted;
pub mod agent;
pub mod args;
#[cfg(feature = "codemode")]
#[cfg_attr(docsrs, doc(cfg(feature = "codemode")))]
pub mod codemode;
mod declaration;
#[cfg(any(feature = "http", feature = "mcp"))]
mod error_chain;
mod excerpt;
mod js;
pub mod json;
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp;

#[cfg(feature = "restate")]
#[cfg_attr(docsrs, doc(cfg(feature = "restate")))]
pub mod durable;
pub mod message;
pub mod prelude;
#[cfg(all(unix, any(feature = "tools", feature = "mcp")))]
mod process;
pub mod prompt;
pub mod provider;
#[cfg(any(feature = "http", feature = "mcp"))]
mod sse;
pub mod stream;
pub mod tool;
pub mod tool_search;
#[cfg(feature = "tools")]
#[cfg_attr(docsrs, doc(cfg(feature = "tools")))]
pub mod tools;
pub mod transcript;

// One path per item. An item's home is the innermost public module that holds its
// definition (`Tool`, defined in a private file of `tool`: `tool::Tool`; `HttpModel`, in
// `provider::http`: `provider::http::HttpModel`); docs, examples and tests name it there.
// Besides its home, an item is reachable only through the front door: the re-exports
// below (the names nearly every program uses) and `prelude`. No other module re-exports
// it: a module that works with another module's item (the MCP tools with
// `tool::ToolHints`, the approval pause with `tool::Approval`) links to its home instead.
// What only the conformance runner calls is in the hidden `__conformance`, outside the
// user API.
pub use agent::{Agent, AgentEvent};
pub use message::{
    AssistantMessage, ContentBlock, Message, StopReason, SystemMessage, ToolCall,
    ToolResultMessage, Usage, UserMessage,
};
pub use stream::{
    AssistantMessageEvent, Context, LanguageModel, StreamOptions, ThinkingLevel, ToolChoice,
};
pub use tokio_util::sync::CancellationToken;
pub use tool::{
    AgentTool, Args, ConstrainedSampling, Ctx, ExecutionMode, FnTool, FromToolContext,
    IntoToolResult, Json, State, Strictness, Tool, ToolContext, ToolDefinition, ToolError,
    ToolRegistry, ToolResult, ToolSet,
};

// Lets code inside this crate (the built-in tools, doc tests) use `#[tool]`, whose
// expansion names `::pi_runtime`.
#[allow(
    unused_extern_crates,
    reason = "used by macro expansions, which the lint does not see"
)]
extern crate self as pi_runtime;

pub use pi_macros::{tool, tool_args};

#[doc(hidden)]
#[path = "private/mod.rs"]
pub mod __private;

#[doc(hidden)]
#[path = "conformance.rs"]
pub mod __conformance;

// The README's examples compile and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
