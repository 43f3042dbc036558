//! Code mode on the user's path: one prompt through `Agent` on the faux model, whose first
//! response calls `codemode` with a script, and whose second answers in text.
//!
//! - `codemode/script/return`: a script that makes no call (`return 1`): what a script costs
//!   before it does anything (a fresh VM on its own thread, the prelude, the result's layout),
//!   plus one agent run of two turns.
//! - `codemode/first_call`: the time from the `codemode` tool's start (the moment the
//!   dispatcher runs it) to the start of the script's first nested call, timed inside the run.
//! - `codemode/calls/{1,10,100,1000}`: a script awaiting that many calls of an echo tool, one
//!   after another; throughput per call. The difference between sizes is the cost of one
//!   nested call (VM to host, the pipeline: lookup, validation, hooks, execute, and back).
//!
//! - `codemode/script/text`: a script that works on text and JSON as scripts commonly do
//!   (searches, splits, replacements, repeats and pads, a JSON round trip): what the bounds
//!   on the built-ins (charged steps, searches in windows) cost a script that needs none.
//!
//! Linear work shows as a flat time per call across the sizes.

use std::hint::black_box;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pi_runtime::agent::Agent;
use pi_runtime::codemode::CodemodeTool;
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::{FnTool, ToolDefinition, ToolError, ToolResult};
use serde_json::{Value, json};

/// The conformance benchmark's echo tool: its result is the compact JSON of its arguments.
fn echo() -> FnTool {
    FnTool::new(
        "echo",
        "Echo the message",
        json!({"type": "object", "properties": {"msg": {"type": "string"}, "n": {"type": "integer"}},
               "required": ["msg"]}),
        |args: Value, _| async move {
            Ok::<_, ToolError>(ToolResult::text(args.to_string()).with_details(args))
        },
    )
}

/// The script of `codemode/script/text`.
const TEXT_SCRIPT: &str = r#"const text = "The quick brown fox jumps over the lazy dog. ".repeat(200);
let n = 0;
for (let i = 0; i < 2000; i++) {
  n += text.indexOf("lazy", i % 100) + text.lastIndexOf("fox") + (text.includes("cat") ? 1 : 0);
}
const lines = Array.from({ length: 2000 }, (_, i) => `line ${i}: value=${i * 7}; name=item${i}`).join("\n");
for (let i = 0; i < 5; i++) {
  const rows = lines.split("\n").map((line) => line.split("; "));
  n += rows.length + lines.replace("item1", "x").length + lines.replaceAll("value=", "v=").length;
}
for (let i = 0; i < 2000; i++) n += "ab".repeat(i % 50).length + String(i).padStart(8, "0").length;
const items = Array.from({ length: 1000 }, (_, i) => ({ id: i, name: "item " + i, tags: ["a", "b"] }));
for (let i = 0; i < 10; i++) n += JSON.parse(JSON.stringify(items)).length;
return n;"#;

/// One run of `script` through a fresh agent with `tools` and the `codemode` tool.
fn run(runtime: &tokio::runtime::Runtime, tools: &[Arc<dyn ToolDefinition>], script: &str) {
    runtime.block_on(async {
        let model = FauxModel::new()
            .respond(FauxResponse::tool_call(
                "call_1",
                "codemode",
                json!({ "code": script }),
            ))
            .respond(FauxResponse::text("done"));
        let agent = Agent::builder()
            .model(model)
            .tools(tools.to_vec())
            .build()
            .expect("an agent");
        black_box(agent.prompt("go").await.expect("a run"))
    });
}

fn codemode(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let codemode: Arc<dyn ToolDefinition> = Arc::new(CodemodeTool::new());
    let tools = vec![Arc::new(echo()) as Arc<dyn ToolDefinition>, codemode];

    c.bench_function("codemode/script/return", |b| {
        b.iter(|| run(&runtime, &tools, "return 1;"));
    });
    let mut text = c.benchmark_group("codemode/script");
    text.sample_size(20);
    text.bench_function("text", |b| b.iter(|| run(&runtime, &tools, TEXT_SCRIPT)));
    text.finish();

    // Timed inside the run: the before_tool_call hook sees the codemode call start (the
    // dispatcher's hook runs just before execute), the marker tool sees the first call.
    let marks: Arc<Mutex<Option<Instant>>> = Arc::default();
    let marker = {
        let marks = Arc::clone(&marks);
        FnTool::new(
            "mark",
            "Notes the time",
            json!({"type": "object", "properties": {}}),
            move |_args, _| {
                let marks = Arc::clone(&marks);
                async move {
                    let started = marks.lock().unwrap_or_else(PoisonError::into_inner).take();
                    let waited = started.map(|at| at.elapsed()).unwrap_or_default();
                    Ok::<_, ToolError>(ToolResult::text(waited.as_nanos().to_string()))
                }
            },
        )
    };
    let first_call_tools = vec![
        Arc::new(marker) as Arc<dyn ToolDefinition>,
        Arc::new(CodemodeTool::new()),
    ];
    c.bench_function("codemode/first_call", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                total += runtime.block_on(first_call(&first_call_tools, &marks));
            }
            total
        });
    });

    let mut group = c.benchmark_group("codemode/calls");
    for calls in [1u64, 10, 100, 1000] {
        let script = format!(
            "let last;\nfor (let n = 0; n < {calls}; n++) last = await tools.echo({{ msg: \"message \" + n, n }});\nreturn last;"
        );
        group.throughput(Throughput::Elements(calls));
        group.bench_function(BenchmarkId::from_parameter(calls), |b| {
            b.iter(|| run(&runtime, &tools, &script));
        });
    }
    group.finish();
}

/// The time from the codemode call's `before_tool_call` to its script's first nested call.
async fn first_call(
    tools: &[Arc<dyn ToolDefinition>],
    marks: &Arc<Mutex<Option<Instant>>>,
) -> Duration {
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call(
            "call_1",
            "codemode",
            json!({ "code": "return await tools.mark({});" }),
        ))
        .respond(FauxResponse::text("done"));
    let hook_marks = Arc::clone(marks);
    let agent = Agent::builder()
        .model(model)
        .tools(tools.to_vec())
        .before_tool_call(move |call| {
            if call.tool_call.name == "codemode" {
                *hook_marks.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
            }
            async { Ok(pi_runtime::agent::ToolCallDecision::Allow) }
        })
        .build()
        .expect("an agent");
    let messages = agent.prompt("go").await.expect("a run");
    // The script returns the marker's text: nanoseconds since the hook, the last line of
    // the codemode result.
    let waited = messages
        .iter()
        .find_map(|message| match message {
            pi_runtime::Message::ToolResult(result) => Some(result.content.clone()),
            _ => None,
        })
        .and_then(|content| {
            let text = pi_runtime::message::join_text(&content);
            text.lines().last()?.trim().parse::<u64>().ok()
        })
        .expect("the script returns the marker's answer");
    Duration::from_nanos(waited)
}

criterion_group!(benches, codemode);
criterion_main!(benches);
