//! The host side of one script: it starts the VM thread, runs the calls the script makes
//! (concurrently unless they must run one at a time), keeps the call records and the output,
//! and decides how the script ended: done, failed, timed out, aborted or crashed.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::loadout::Namespace;
use super::output::utf16_prefix;
use super::vm::{self, OutputItem, Reply, VmEvent, VmStart};
use crate::tool_search::{DEFAULT_LIMIT, SearchDocument, ToolNamespace, ToolSearchIndex};

const ARGS_PREVIEW_CHARS: u64 = 200;
const ERROR_PREVIEW_CHARS: u64 = 500;
/// How often, at most, the call records are published while they change. pi publishes on
/// every start and end, which copies the whole list each time: quadratic in a script's calls
/// (100,000 calls would copy five billion records). One snapshot per interval, and a wait of
/// at least [`PROGRESS_WAIT_FACTOR`] times what the last one took to build, keeps the cost
/// linear: 100,000 calls take 7.0 s instead of 6.2 s in a debug build (the snapshot is also
/// sent on and dropped elsewhere, so its true cost is about twice what is timed here). A
/// viewer still sees a call within a frame or two of its start while the list is short.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(50);
const PROGRESS_WAIT_FACTOR: u32 = 30;
/// How long a script's end waits for its thread to end after stopping it. The VM sees the
/// stop at its next interrupt poll, which the prelude makes come within milliseconds even in
/// long built-ins; a thread still running after this is reported (it cannot be killed).
const THREAD_END_GRACE: Duration = Duration::from_secs(2);

/// Stops the VM when the script's run ends in any way, its future dropped included (a
/// caller's timeout around `prompt()`, a server whose client hung up): the VM's interrupt
/// handler sees the flag and ends the script, and with it the thread.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A tool as the script sees it.
#[derive(Debug, Clone)]
pub(crate) struct ScriptTool {
    pub(crate) name: String,
    pub(crate) js_name: String,
    /// The tool sample (`ALL_TOOLS`, `describeTool`).
    pub(crate) sample: String,
    /// Its calls run alone.
    pub(crate) sequential: bool,
    /// What tool search reads: the description, the parameters and the namespace.
    pub(crate) description: String,
    pub(crate) parameters: Value,
    pub(crate) namespace: Option<Namespace>,
}

/// How a nested call ended, for the script and for its record.
#[derive(Debug)]
pub(crate) struct CallOutcome {
    /// The id the pipeline ran the call under.
    pub(crate) id: Option<String>,
    /// The value (none for `undefined`) or the rejection's message.
    pub(crate) value: Result<Option<Value>, String>,
    /// The call failed (`error` in its record), even when the script gets a value.
    pub(crate) failed: bool,
    /// The error text of the record.
    pub(crate) error: Option<String>,
}

/// Runs the nested calls of one script.
pub(crate) trait CallHost: Send + Sync {
    /// Run call `number` (from 1) of `tool` with the script's arguments.
    fn call(
        &self,
        tool: &ScriptTool,
        number: u64,
        args: Option<Value>,
    ) -> BoxFuture<'static, CallOutcome>;

    /// The call records so far, published when the script starts and then, while they
    /// change, at most once per [`PROGRESS_INTERVAL`]. Does nothing by default.
    fn progress(&self, _calls: &[CallRecord]) {}
}

/// A call's record: `{id, name, args, status, error?}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CallRecord {
    /// `<codemode call id>/?` until the call returns, then the pipeline's id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The script's arguments as JSON, cut to 200 characters.
    pub args: String,
    /// `running`, then `ok`, `error` or `cancelled`.
    pub status: CallStatus,
    /// What the script got as the rejection (or the error text), cut to 500 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Where a nested call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum CallStatus {
    /// Not returned yet.
    Running,
    /// Returned a result that is not an error.
    Ok,
    /// Returned an error result.
    Error,
    /// Aborted, or still running when the script ended.
    Cancelled,
}

/// How a script failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An exception escaped the script (a syntax error included).
    Script,
    /// The time limit or the interrupt budget ran out.
    Timeout,
    /// The run was aborted.
    Aborted,
    /// The VM failed.
    Sandbox,
}

impl ErrorKind {
    /// pi's name: `script`, `timeout`, `aborted`, `sandbox`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Script => "script",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Aborted => "aborted",
            ErrorKind::Sandbox => "sandbox",
        }
    }
}

/// How a script failed: pi's `{kind, name?, message, stack?}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    /// What failed.
    pub kind: ErrorKind,
    /// The error's `name` (script errors).
    pub name: Option<String>,
    /// The message.
    pub message: String,
    /// `Name: message` and the engine's stack frames (script errors).
    pub stack: Option<String>,
}

impl ScriptError {
    fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ScriptError {
            kind,
            name: None,
            message: message.into(),
            stack: None,
        }
    }

    /// The text the model sees after `Script error:`.
    pub fn text(&self) -> String {
        match self.kind {
            ErrorKind::Script => self.stack.clone().unwrap_or_else(|| {
                format!(
                    "{}: {}",
                    self.name.as_deref().unwrap_or("Error"),
                    self.message
                )
            }),
            ErrorKind::Timeout => format!("Script timed out: {}", self.message),
            ErrorKind::Aborted => format!("Script aborted: {}", self.message),
            ErrorKind::Sandbox => format!("Script sandbox failed: {}", self.message),
        }
    }
}

/// The store writes of a successful script: keys in first-write order, each in its final state.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct StoreWrites {
    pub(crate) set: Map<String, Value>,
    pub(crate) delete: Vec<String>,
}

/// What one script did.
#[derive(Debug)]
pub(crate) struct RawResult {
    pub(crate) outcome: Result<(Option<Value>, StoreWrites), ScriptError>,
    pub(crate) output: Vec<OutputItem>,
    pub(crate) calls: Vec<CallRecord>,
}

/// One script's run.
pub(crate) struct ScriptRun {
    pub(crate) code: String,
    pub(crate) call_id: String,
    pub(crate) tools: Vec<ScriptTool>,
    /// `{key: value}` as `load()` sees it.
    pub(crate) store: Map<String, Value>,
    pub(crate) timeout_ms: Option<u64>,
    pub(crate) interrupt_budget: Option<u64>,
    /// Every nested call runs alone.
    pub(crate) sequential: bool,
    /// Scripts get `searchTools`, `describeTool` and `describeNamespace`.
    pub(crate) discovery: bool,
    pub(crate) signal: CancellationToken,
}

/// A call waiting for its turn or running.
struct Started {
    vm_id: u64,
    record: usize,
}

type Running = FuturesUnordered<BoxFuture<'static, (Started, CallOutcome)>>;

/// When the next snapshot of the call records may go out, and whether they changed since
/// the last.
struct Progress {
    due: tokio::time::Instant,
    changed: bool,
}

impl Progress {
    /// Publish the empty list.
    fn started(host: &dyn CallHost) -> Self {
        let mut progress = Progress {
            due: tokio::time::Instant::now(),
            changed: false,
        };
        progress.publish(host, &[]);
        progress
    }

    fn publish(&mut self, host: &dyn CallHost, calls: &[CallRecord]) {
        let started = tokio::time::Instant::now();
        host.progress(calls);
        let cost = started.elapsed();
        self.due = started + cost + PROGRESS_INTERVAL.max(cost * PROGRESS_WAIT_FACTOR);
        self.changed = false;
    }
}

/// Run the script to its end.
pub(crate) async fn run_script(run: ScriptRun, host: Arc<dyn CallHost>) -> RawResult {
    let store_json: Map<String, Value> = run
        .store
        .iter()
        .map(|(key, value)| (key.clone(), Value::String(value.to_string())))
        .collect();
    let tools_json: Vec<Value> = run
        .tools
        .iter()
        .map(|tool| json!({"name": tool.name, "jsName": tool.js_name, "description": tool.sample}))
        .collect();
    let start = VmStart {
        code: run.code.clone(),
        tools_json: Value::Array(tools_json).to_string(),
        globals_json: if run.discovery {
            json!([{"name": "searchTools", "spread": true},
                   {"name": "describeTool", "spread": true},
                   {"name": "describeNamespace", "spread": true}])
            .to_string()
        } else {
            "[]".to_owned()
        },
        store_json: Value::Object(store_json).to_string(),
        interrupt_budget: run.interrupt_budget,
    };
    let (events_tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let (replies, replies_rx) = mpsc::channel::<Reply>();
    let stop = Arc::new(AtomicBool::new(false));
    let stop_on_drop = StopOnDrop(Arc::clone(&stop));
    let mut result = RawResult {
        outcome: Err(ScriptError::new(
            ErrorKind::Sandbox,
            "the script did not end",
        )),
        output: Vec::new(),
        calls: Vec::new(),
    };
    let vm_stop = Arc::clone(&stop);
    let spawned = std::thread::Builder::new()
        .name("codemode".to_owned())
        .stack_size(vm::THREAD_STACK)
        .spawn(move || vm::run(start, events_tx, replies_rx, vm_stop));
    if let Err(error) = spawned {
        result.outcome = Err(ScriptError::new(ErrorKind::Sandbox, error.to_string()));
        return result;
    }
    // Show the script as running before its first call, as pi does.
    let mut progress = Progress::started(&*host);
    let mut running: Running = FuturesUnordered::new();
    let mut waiting: VecDeque<(Started, &ScriptTool, Option<Value>)> = VecDeque::new();
    let mut sequential_running = false;
    let mut number = 0u64;
    let deadline = run
        .timeout_ms
        .map(|ms| tokio::time::Instant::now() + Duration::from_millis(ms));
    let timeout = async {
        match deadline {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(timeout);
    let outcome = loop {
        tokio::select! {
            // Calls first: a call the script started runs up to its first wait before the
            // script's end is seen, as it would in pi.
            biased;
            Some((started, outcome)) = running.next(), if !running.is_empty() => {
                sequential_running = false;
                let record = &mut result.calls[started.record];
                if let Some(id) = outcome.id {
                    record.id = id;
                }
                record.status = if outcome.failed { CallStatus::Error } else { CallStatus::Ok };
                record.error = outcome.error.map(|error| preview(&error, ERROR_PREVIEW_CHARS));
                progress.changed = true;
                let (ok, payload) = match outcome.value {
                    Ok(value) => (true, value.map(|v| v.to_string()).unwrap_or_default()),
                    Err(message) => (false, message),
                };
                let _ = replies.send(Reply { id: started.vm_id, ok, payload });
            }
            event = events.recv() => match event {
                None => break Err(ScriptError::new(ErrorKind::Sandbox, "the script's thread ended")),
                Some(VmEvent::Output(item)) => result.output.push(item),
                Some(VmEvent::Call { id, global: true, name, args }) => {
                    let reply = global_call(&run.tools, &name, args.as_deref());
                    let (ok, payload) = match reply {
                        Ok(value) => (true, value.map(|v| v.to_string()).unwrap_or_default()),
                        Err(message) => (false, message),
                    };
                    // The VM is gone once it ended; nothing waits for the reply then.
                    let _ = replies.send(Reply { id, ok, payload });
                }
                Some(VmEvent::Call { id, global: false, name, args }) => {
                    let Some(tool) = run.tools.iter().find(|tool| tool.name == name) else {
                        let payload = format!("Unknown tool \"{name}\"");
                        let _ = replies.send(Reply { id, ok: false, payload });
                        continue;
                    };
                    let record = result.calls.len();
                    result.calls.push(CallRecord {
                        id: format!("{}/?", run.call_id),
                        name: tool.name.clone(),
                        args: args.as_deref().map(|json| preview(json, ARGS_PREVIEW_CHARS)).unwrap_or_default(),
                        status: CallStatus::Running,
                        error: None,
                    });
                    progress.changed = true;
                    let parsed = args.as_deref().and_then(|json| parse_json(json).ok());
                    waiting.push_back((Started { vm_id: id, record }, tool, parsed));
                }
                Some(VmEvent::Done { value, writes }) => break finished(value.as_deref(), &writes),
                Some(VmEvent::Failed(error)) => break Err(script_error(&error)),
                Some(VmEvent::BudgetExhausted) => break Err(ScriptError::new(
                    ErrorKind::Timeout,
                    format!("Execution exceeded its interrupt budget of {}", run.interrupt_budget.unwrap_or(0)),
                )),
                Some(VmEvent::Crashed(message)) => break Err(ScriptError::new(ErrorKind::Sandbox, message)),
            },
            () = &mut timeout => break Err(ScriptError::new(
                ErrorKind::Timeout,
                format!("Execution timed out after {} ms", run.timeout_ms.unwrap_or(0)),
            )),
            () = run.signal.cancelled() => break Err(ScriptError::new(ErrorKind::Aborted, "Execution aborted")),
            // Wakes a quiet script when a snapshot is due; it goes out below.
            () = tokio::time::sleep_until(progress.due), if progress.changed => {}
        }
        // Start what may start: in order, each call alone when it or the run is sequential.
        while let Some((_, tool, _)) = waiting.front() {
            let alone = run.sequential || tool.sequential;
            if sequential_running || (alone && !running.is_empty()) {
                break;
            }
            let Some((started, tool, args)) = waiting.pop_front() else {
                break;
            };
            number += 1;
            sequential_running = alone;
            let call = host.call(tool, number, args);
            running.push(Box::pin(async move { (started, call.await) }));
        }
        // Here rather than in the timer's branch: a busy script keeps the branches above
        // ready, and the timer would wait behind them.
        if progress.changed && tokio::time::Instant::now() >= progress.due {
            progress.publish(&*host, &result.calls);
        }
    };
    drop(stop_on_drop);
    drop(replies);
    drop(running);
    // The thread drops its sender when it ends: wait for that, so that a script's end is
    // its thread's end too.
    let ended = tokio::time::timeout(THREAD_END_GRACE, async {
        while events.recv().await.is_some() {}
    })
    .await;
    if ended.is_err() {
        tracing::error!(
            call_id = %run.call_id,
            "a code mode script's thread still runs {THREAD_END_GRACE:?} after the script was stopped: \
             it is inside a built-in that does not poll for interrupts, and ends when that returns"
        );
    }
    for record in &mut result.calls {
        if record.status == CallStatus::Running {
            record.status = CallStatus::Cancelled;
        }
    }
    result.outcome = outcome;
    result
}

/// The discovery globals: `searchTools(query, { limit?, namespace? })`, `describeTool(name)`,
/// `describeNamespace(name)`. `args` is the JSON of the script's arguments (an array).
fn global_call(
    tools: &[ScriptTool],
    name: &str,
    args: Option<&str>,
) -> Result<Option<Value>, String> {
    let args: Value = args
        .and_then(|json| parse_json(json).ok())
        .unwrap_or(Value::Null);
    let first = args.get(0);
    let entry = |tool: &ScriptTool| json!({"name": tool.js_name, "description": tool.sample});
    match name {
        "searchTools" => {
            let Some(Value::String(query)) = first else {
                return Err("searchTools() expects a query string".to_owned());
            };
            let options = args.get(1);
            let limit = match options.and_then(|options| options.get("limit")) {
                None | Some(Value::Null) => Some(DEFAULT_LIMIT),
                Some(Value::Number(limit)) => limit
                    .as_f64()
                    .filter(|limit| limit.fract() == 0.0 && *limit > 0.0)
                    .map(|limit| limit.min(usize::MAX as f64) as usize),
                Some(_) => None,
            };
            let Some(limit) = limit else {
                return Err("searchTools() limit must be a positive integer".to_owned());
            };
            let namespace = match options.and_then(|options| options.get("namespace")) {
                None | Some(Value::Null) => None,
                Some(Value::String(namespace)) => {
                    Some(namespace.as_str()).filter(|n| !n.is_empty())
                }
                Some(_) => return Err("searchTools() namespace must be a string".to_owned()),
            };
            let documents = tools.iter().filter_map(|tool| {
                if let Some(wanted) = namespace
                    && !tool
                        .namespace
                        .as_ref()
                        .is_some_and(|ns| ns.is_named(wanted))
                {
                    return None;
                }
                let namespace = tool.namespace.as_ref().map(search_namespace);
                Some(SearchDocument::new(
                    tool.name.clone(),
                    &tool.description,
                    &tool.parameters,
                    namespace.as_ref(),
                ))
            });
            let index = ToolSearchIndex::new(documents);
            let found: Vec<Value> = index
                .search(query, limit)
                .into_iter()
                .filter_map(|found| tools.iter().find(|tool| tool.name == found.name))
                .map(entry)
                .collect();
            Ok(Some(Value::Array(found)))
        }
        "describeTool" => {
            let Some(Value::String(wanted)) = first else {
                return Err("describeTool() expects a tool name".to_owned());
            };
            Ok(tools
                .iter()
                .find(|tool| &tool.name == wanted || &tool.js_name == wanted)
                .map(|tool| Value::String(tool.sample.clone())))
        }
        "describeNamespace" => {
            let Some(Value::String(wanted)) = first else {
                return Err("describeNamespace() expects a namespace name".to_owned());
            };
            let members: Vec<&ScriptTool> = tools
                .iter()
                .filter(|tool| {
                    tool.namespace
                        .as_ref()
                        .is_some_and(|ns| ns.is_named(wanted))
                })
                .collect();
            let Some(namespace) = members.first().and_then(|tool| tool.namespace.as_ref()) else {
                return Ok(None);
            };
            let mut described = Map::new();
            described.insert("name".into(), Value::String(namespace.name.clone()));
            if !namespace.description.is_empty() {
                described.insert(
                    "description".into(),
                    Value::String(namespace.description.clone()),
                );
            }
            if !namespace.instructions.is_empty() {
                described.insert(
                    "instructions".into(),
                    Value::String(namespace.instructions.clone()),
                );
            }
            let names = members
                .iter()
                .map(|tool| Value::String(tool.js_name.clone()));
            described.insert("tools".into(), Value::Array(names.collect()));
            Ok(Some(Value::Object(described)))
        }
        other => Err(format!("Unknown global \"{other}\"")),
    }
}

/// A namespace as tool search reads it.
fn search_namespace(namespace: &Namespace) -> ToolNamespace {
    let mut search = ToolNamespace::new(namespace.name.clone());
    if !namespace.description.is_empty() {
        search = search.with_description(namespace.description.clone());
    }
    if !namespace.instructions.is_empty() {
        search = search.with_instructions(namespace.instructions.clone());
    }
    search
}

fn finished(
    value: Option<&str>,
    writes: &str,
) -> Result<(Option<Value>, StoreWrites), ScriptError> {
    let bridge = |what: &str| {
        ScriptError::new(
            ErrorKind::Sandbox,
            format!(
                "Sandbox bridge broken: {what}. The script may have modified built-ins such as a prototype's toJSON."
            ),
        )
    };
    let value = match value {
        None => None,
        Some(json) => Some(parse_json(json).map_err(|_| bridge("return value is not valid JSON"))?),
    };
    let entries: Vec<Vec<String>> =
        parse_json(writes).map_err(|_| bridge("store writes are not an array"))?;
    let mut store = StoreWrites::default();
    for entry in entries {
        match entry.as_slice() {
            [key] => store.delete.push(key.clone()),
            [key, json] => {
                let value = parse_json(json)
                    .map_err(|_| bridge(&format!("store value for {key:?} is not valid JSON")))?;
                store.set.insert(key.clone(), value);
            }
            _ => return Err(bridge("store writes contain a malformed entry")),
        }
    }
    Ok((value, store))
}

fn script_error(json: &str) -> ScriptError {
    let parsed: Value = parse_json(json).unwrap_or(Value::Null);
    let text = |key: &str| parsed.get(key).and_then(Value::as_str).map(str::to_owned);
    match text("message") {
        Some(message) => ScriptError {
            kind: ErrorKind::Script,
            name: text("name"),
            message,
            stack: text("stack"),
        },
        None => ScriptError::new(
            ErrorKind::Sandbox,
            "Sandbox bridge broken: script error is malformed. The script may have modified built-ins such as a prototype's toJSON.",
        ),
    }
}

/// JSON the script's `JSON.stringify` wrote. A string holding a lone surrogate (`"\ud800"`,
/// which pi prints and returns as it is) is written as its `\uXXXX` escape, which is no
/// Unicode text and which serde refuses: each such escape reads as U+FFFD, the nearest a
/// Rust string holds.
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(json: &str) -> serde_json::Result<T> {
    serde_json::from_str(json).or_else(|error| {
        if json.contains("\\u") {
            serde_json::from_str(&replace_lone_surrogates(json))
        } else {
            Err(error)
        }
    })
}

/// `json` with each escape of a lone surrogate replaced by `\ufffd`. Backslashes occur in
/// JSON only as escapes, so reading escape by escape never mistakes an escaped backslash
/// followed by `u` for an escape.
fn replace_lone_surrogates(json: &str) -> String {
    let unit = |escape: &str| {
        let hex = escape.strip_prefix("\\u").and_then(|rest| rest.get(..4))?;
        u16::from_str_radix(hex, 16).ok()
    };
    let mut out = String::with_capacity(json.len());
    let mut rest = json;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let escape = &rest[at..];
        let taken = match unit(escape) {
            Some(0xD800..=0xDBFF)
                if matches!(escape.get(6..).and_then(unit), Some(0xDC00..=0xDFFF)) =>
            {
                out.push_str(&escape[..12]);
                12
            }
            Some(0xD800..=0xDFFF) => {
                out.push_str("\\ufffd");
                6
            }
            Some(_) => {
                out.push_str(&escape[..6]);
                6
            }
            None => {
                let len = 1 + escape[1..].chars().next().map_or(0, char::len_utf8);
                out.push_str(&escape[..len]);
                len
            }
        };
        rest = &escape[taken..];
    }
    out.push_str(rest);
    out
}

/// `text` cut to `max` UTF-16 units: the first `max - 3` and `...`.
pub(crate) fn preview(text: &str, max: u64) -> String {
    if crate::js::utf16_len(text) as u64 <= max {
        return text.to_owned();
    }
    format!("{}...", utf16_prefix(text, max - 3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogate_escapes_read_as_replacement_characters() {
        let json = r#"["\ud800", "\udc00x", "\ud83d\ude00", "\\ud800", {"\ud800": 1}]"#;
        let value: Value = parse_json(json).expect("the JSON reads");
        assert_eq!(
            value,
            json!(["\u{FFFD}", "\u{FFFD}x", "\u{1F600}", "\\ud800", {"\u{FFFD}": 1}])
        );
    }
}
