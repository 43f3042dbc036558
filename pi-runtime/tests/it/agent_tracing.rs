//! The `tracing` spans of a run (OpenTelemetry GenAI conventions): names through
//! `otel.name`, parents (tool calls nest under the run even when they run in parallel on
//! other threads), attributes, and `error.type` per kind of failure.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pi_runtime::agent::{Agent, ToolCallDecision};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::{FnTool, ToolError, ToolResult};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Dispatch, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// One span as a subscriber saw it.
#[derive(Debug, Clone)]
struct SpanRecord {
    parent: Option<usize>,
    fields: BTreeMap<String, String>,
}

impl SpanRecord {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

/// Records every span with its fields and its parent. Span ids are reused once a span
/// closes, so records are kept by position, and ids map to the open ones.
#[derive(Clone, Default)]
struct Capture {
    spans: Arc<Mutex<Vec<SpanRecord>>>,
    open: Arc<Mutex<HashMap<u64, usize>>>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let mut open = self.open.lock().unwrap();
        let parent = ctx
            .span(id)
            .and_then(|span| span.parent())
            .and_then(|parent| open.get(&parent.id().into_u64()).copied());
        let mut spans = self.spans.lock().unwrap();
        open.insert(id.into_u64(), spans.len());
        spans.push(SpanRecord { parent, fields });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        let Some(&index) = self.open.lock().unwrap().get(&id.into_u64()) else {
            return;
        };
        values.record(&mut Fields(&mut self.spans.lock().unwrap()[index].fields));
    }

    fn on_close(&self, id: Id, _ctx: Context<'_, S>) {
        self.open.lock().unwrap().remove(&id.into_u64());
    }
}

fn add() -> FnTool {
    FnTool::new(
        "add",
        "Add two numbers.",
        json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
               "required": ["a", "b"]}),
        |args, _| async move {
            // Long enough for the calls of the batch to overlap on the worker threads.
            tokio::time::sleep(Duration::from_millis(20)).await;
            let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
            Ok::<_, ToolError>(ToolResult::text(sum.to_string()))
        },
    )
}

fn named(name: &str, panics: bool) -> FnTool {
    FnTool::new(
        name,
        "A tool.",
        json!({"type": "object"}),
        move |_, _| async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            if panics {
                panic!("the tool broke");
            }
            Ok::<_, ToolError>(ToolResult::text("ran"))
        },
    )
}

/// Run `run` on a multi-threaded runtime whose worker threads all report to `capture`.
fn traced<F: std::future::Future<Output = ()>>(capture: &Capture, run: F) {
    // tracing caches each callsite's interest for the whole process. While only one
    // dispatcher exists, a callsite first reached by another test's thread (which has none)
    // would be cached as never, and this run's spans lost. A second, inert dispatcher makes
    // every registration ask all live dispatchers, this one included; the rebuild repairs
    // callsites registered before.
    let _anchor = Dispatch::new(tracing_subscriber::registry());
    let dispatch = Dispatch::new(tracing_subscriber::registry().with(capture.clone()));
    tracing::callsite::rebuild_interest_cache();
    let for_workers = dispatch.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .on_thread_start(move || {
            // The guard lives as long as the thread: each worker reports to `capture`.
            std::mem::forget(tracing::dispatcher::set_default(&for_workers));
        })
        .build()
        .unwrap();
    let _main = tracing::dispatcher::set_default(&dispatch);
    runtime.block_on(run);
    drop(runtime);
}

/// Run one prompt with a parallel batch of five calls (two that succeed, an invalid one, a
/// blocked one, a panicking one).
fn traced_run(capture: &Capture, capture_content: bool) {
    traced(capture, async {
        let model = FauxModel::new()
            .respond(
                FauxResponse::tool_call("c1", "add", json!({"a": 1, "b": 2}))
                    .and_tool_call("c2", "add", json!({"a": 1, "b": "x"}))
                    .and_tool_call("c3", "rm", json!({}))
                    .and_tool_call("c4", "boom", json!({}))
                    .and_tool_call("c5", "add", json!({"a": 2, "b": 2})),
            )
            .respond(FauxResponse::text("done"));
        let agent = Agent::builder()
            .model(model)
            .tools((add(), named("rm", false), named("boom", true)))
            .before_tool_call(|call| async move {
                Ok(if call.tool_call.name == "rm" {
                    ToolCallDecision::block("not allowed")
                } else {
                    ToolCallDecision::Allow
                })
            })
            .capture_message_content(capture_content)
            .build()
            .unwrap();
        agent.prompt("go").await.unwrap();
    });
}

fn by_name<'a>(spans: &'a [SpanRecord], name: &str) -> Vec<(usize, &'a SpanRecord)> {
    spans
        .iter()
        .enumerate()
        .filter(|(_, span)| span.field("otel.name") == Some(name))
        .collect()
}

#[test]
fn a_run_reports_its_model_requests_and_tool_calls_as_nested_spans() {
    let capture = Capture::default();
    traced_run(&capture, false);
    let spans = capture.spans.lock().unwrap().clone();

    let runs = by_name(&spans, "invoke_agent");
    assert_eq!(runs.len(), 1, "{spans:#?}");
    let (run, run_span) = runs[0];
    assert_eq!(run_span.parent, None);
    assert_eq!(
        run_span.field("gen_ai.operation.name"),
        Some("invoke_agent")
    );
    assert_eq!(run_span.field("gen_ai.provider.name"), Some("faux"));
    assert_eq!(run_span.field("gen_ai.request.model"), Some("faux-1"));

    let chats = by_name(&spans, "chat faux-1");
    assert_eq!(chats.len(), 2);
    let reasons: Vec<_> = chats
        .iter()
        .map(|(_, chat)| chat.field("gen_ai.response.finish_reasons").unwrap())
        .collect();
    assert_eq!(reasons, [r#"["toolUse"]"#, r#"["stop"]"#]);
    for (_, chat) in &chats {
        assert_eq!(chat.parent, Some(run));
        assert_eq!(chat.field("otel.kind"), Some("client"));
        assert_eq!(chat.field("gen_ai.operation.name"), Some("chat"));
        assert_eq!(chat.field("gen_ai.usage.input_tokens"), Some("0"));
        assert_eq!(chat.field("error.type"), None);
        assert_eq!(
            chat.field("gen_ai.output.messages"),
            None,
            "content is opt-in"
        );
    }

    let tools: Vec<_> = spans
        .iter()
        .filter(|span| span.field("gen_ai.operation.name") == Some("execute_tool"))
        .collect();
    let shown: Vec<_> = tools
        .iter()
        .map(|span| {
            (
                span.field("otel.name").unwrap(),
                span.field("gen_ai.tool.call.id").unwrap(),
                span.field("error.type"),
                span.field("otel.status_code"),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("execute_tool add", "c1", None, None),
            ("execute_tool add", "c2", Some("validation"), Some("error")),
            ("execute_tool rm", "c3", Some("blocked"), Some("error")),
            ("execute_tool boom", "c4", Some("panic"), Some("error")),
            ("execute_tool add", "c5", None, None),
        ]
    );
    for span in &tools {
        assert_eq!(
            span.parent,
            Some(run),
            "tool spans nest under the run: {span:?}"
        );
        assert_eq!(span.field("gen_ai.tool.type"), Some("function"));
        assert_eq!(
            span.field("gen_ai.tool.call.arguments"),
            None,
            "content is opt-in"
        );
    }
}

#[test]
fn content_is_recorded_only_when_asked_for() {
    let capture = Capture::default();
    traced_run(&capture, true);
    let spans = capture.spans.lock().unwrap().clone();
    let first_call = spans
        .iter()
        .find(|span| span.field("gen_ai.tool.call.id") == Some("c1"))
        .unwrap();
    assert_eq!(
        first_call.field("gen_ai.tool.call.arguments"),
        Some(r#"{"a":1,"b":2}"#)
    );
    assert_eq!(
        first_call.field("gen_ai.tool.call.result"),
        Some(r#"[{"type":"text","text":"3"}]"#)
    );
    let last_chat = by_name(&spans, "chat faux-1").pop().unwrap().1;
    assert_eq!(
        last_chat.field("gen_ai.output.messages"),
        Some(r#"[{"type":"text","text":"done"}]"#)
    );
}

/// A code mode script's calls run through the pipeline under spans of their own, children
/// of the `codemode` call's span, with their ids and outcomes.
#[cfg(feature = "codemode")]
#[test]
fn nested_calls_of_a_script_sit_under_the_codemode_span() {
    use pi_runtime::codemode::CodemodeTool;

    let capture = Capture::default();
    traced(&capture, async {
        let code = "await tools.add({ a: 1, b: 2 });\n\
                    try { await tools.add({ a: 1 }); } catch (e) {}\n\
                    return 'ok';";
        let model = FauxModel::new()
            .respond(FauxResponse::tool_call(
                "c1",
                "codemode",
                json!({ "code": code }),
            ))
            .respond(FauxResponse::text("done"));
        let agent = Agent::builder()
            .model(model)
            .tools((add(), CodemodeTool::new()))
            .build()
            .unwrap();
        agent.prompt("go").await.unwrap();
    });
    let spans = capture.spans.lock().unwrap().clone();

    let scripts = by_name(&spans, "execute_tool codemode");
    assert_eq!(scripts.len(), 1, "{spans:#?}");
    let (script, script_span) = scripts[0];
    assert_eq!(script_span.field("gen_ai.tool.call.id"), Some("c1"));
    let nested = by_name(&spans, "execute_tool add");
    let summary: Vec<_> = nested
        .iter()
        .map(|(_, span)| {
            (
                span.parent,
                span.field("gen_ai.tool.call.id"),
                span.field("error.type"),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (Some(script), Some("c1/1"), None),
            (Some(script), Some("c1/2"), Some("validation")),
        ]
    );
}

#[test]
fn a_sub_agents_run_span_sits_under_the_call_that_runs_it() {
    let capture = Capture::default();
    traced(&capture, async {
        let child = Agent::builder()
            .model(FauxModel::new().respond(FauxResponse::text("child")))
            .build_definition()
            .unwrap();
        let parent = Agent::builder()
            .model(
                FauxModel::new()
                    .respond(FauxResponse::tool_call("c1", "child", json!({"task": "t"})))
                    .respond(FauxResponse::text("done")),
            )
            .tools(child.as_tool("child", "A child."))
            .build()
            .unwrap();
        parent.prompt("go").await.unwrap();
    });
    let spans = capture.spans.lock().unwrap().clone();
    let runs = by_name(&spans, "invoke_agent");
    assert_eq!(runs.len(), 2, "{spans:#?}");
    let (parent_run, parent_span) = runs[0];
    assert_eq!(parent_span.parent, None);
    let call = by_name(&spans, "execute_tool child");
    assert_eq!(call.len(), 1);
    let (call, call_span) = call[0];
    assert_eq!(call_span.parent, Some(parent_run));
    let (child_run, child_span) = runs[1];
    assert_eq!(
        child_span.parent,
        Some(call),
        "invoke_agent under execute_tool"
    );
    let chats: Vec<_> = by_name(&spans, "chat faux-1")
        .into_iter()
        .map(|(_, chat)| chat.parent)
        .collect();
    assert_eq!(chats, [Some(parent_run), Some(child_run), Some(parent_run)]);
}
