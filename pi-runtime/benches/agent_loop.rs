//! The agent loop on the user's path, in the shapes of the conformance user-path benchmark
//! (`shared/conformance/bench/generate.py`): one prompt through `Agent` on the faux model.
//!
//! - `text/{1,10,100}KiB`: one streamed text answer; throughput per byte.
//! - `batch/{10,100,1000}`: one response with that many calls of an echo tool, then a text
//!   answer; throughput per call.
//! - `batch_typed/{100,1000}`: the same batches calling a `#[tool]` fn, whose arguments are
//!   deserialized into its parameter struct; throughput per call.
//! - `turns/20`: twenty responses of one call each; throughput per turn.
//! - `conversation/start`: a conversation of a shared definition with ten tools, started and
//!   dropped (what a server pays per request before the first model call).
//!
//! Linear work shows as a flat time per byte and per call across the sizes.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pi_runtime::agent::Agent;
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::{FnTool, ToolDefinition, ToolError, ToolResult, tool};
use serde_json::{Value, json};

/// pi-ref's faux provider streams 256 characters per delta; the user-path cases use it too.
const CHUNK_CHARS: usize = 256;

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

/// Echo the message, as a `#[tool]` fn.
#[tool(name = "echo")]
async fn echo_typed(
    /// The message.
    msg: String,
    /// A number.
    n: Option<i64>,
) -> String {
    format!("{msg} {n:?}")
}

/// About `size` bytes of code-like text with quotes, backslashes and newlines.
fn code_text(size: usize) -> String {
    const LINES: [&str; 4] = [
        "export function f(x: number): number { return x * 2; }\n",
        "  const s = \"line\\n\" + `tab\\t`;\n",
        "  if (a && b) { log(\"ok\", { id: 1 }); }\n",
        "  // a comment about \"item\" and C:\\\\path\n",
    ];
    let mut text = String::with_capacity(size + 64);
    let mut line = 0;
    while text.len() < size {
        text.push_str(LINES[line % LINES.len()]);
        line += 1;
    }
    text.truncate(size);
    text
}

fn batch(calls: usize) -> FauxResponse {
    (0..calls).fold(FauxResponse::new(Vec::new()), |response, n| {
        response.and_tool_call(
            format!("c{n}"),
            "echo",
            json!({"msg": format!("message {n}"), "n": n}),
        )
    })
}

/// A fresh agent per run, as a program builds one per conversation; the tool is built once
/// (its schema compiled once), as a program does.
fn run(
    runtime: &tokio::runtime::Runtime,
    tool: &Arc<dyn ToolDefinition>,
    responses: &[FauxResponse],
) {
    runtime.block_on(async {
        let model = responses.iter().cloned().fold(
            FauxModel::new().with_chunk_chars(CHUNK_CHARS),
            FauxModel::respond,
        );
        let agent = Agent::builder()
            .model(model)
            .tools(vec![Arc::clone(tool)])
            .build()
            .expect("an agent");
        black_box(agent.prompt("go").await.expect("a run"))
    });
}

fn agent_loop(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let tool: Arc<dyn ToolDefinition> = Arc::new(echo());

    let mut group = c.benchmark_group("agent_loop/text");
    for kib in [1, 10, 100] {
        let responses = [FauxResponse::text(code_text(kib << 10))];
        group.throughput(Throughput::Bytes((kib as u64) << 10));
        group.bench_function(BenchmarkId::from_parameter(format!("{kib}KiB")), |b| {
            b.iter(|| run(&runtime, &tool, &responses));
        });
    }
    group.finish();

    // A batch's calls are tasks of their own on a multi-thread runtime and futures of the
    // loop's task on a current-thread one: both are a user's path.
    let one_thread = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    for (flavor, runtime) in [("multi_thread", &runtime), ("current_thread", &one_thread)] {
        let mut group = c.benchmark_group(format!("agent_loop/batch/{flavor}"));
        for calls in [10, 100, 1000] {
            let responses = [batch(calls), FauxResponse::text("(done)")];
            group.throughput(Throughput::Elements(calls as u64));
            group.bench_function(BenchmarkId::from_parameter(calls), |b| {
                b.iter(|| run(runtime, &tool, &responses));
            });
        }
        group.finish();
    }

    let typed: Arc<dyn ToolDefinition> = Arc::new(EchoTyped);
    let mut group = c.benchmark_group("agent_loop/batch_typed");
    for calls in [100, 1000] {
        let responses = [batch(calls), FauxResponse::text("(done)")];
        group.throughput(Throughput::Elements(calls as u64));
        group.bench_function(BenchmarkId::from_parameter(calls), |b| {
            b.iter(|| run(&runtime, &typed, &responses));
        });
    }
    group.finish();

    let mut group = c.benchmark_group("agent_loop/turns");
    let turns = 20;
    let mut responses: Vec<FauxResponse> = (0..turns)
        .map(|n| {
            FauxResponse::tool_call(
                format!("t{n}"),
                "echo",
                json!({"msg": format!("turn {n}"), "n": n}),
            )
        })
        .collect();
    responses.push(FauxResponse::text("(done)"));
    group.throughput(Throughput::Elements(turns));
    group.bench_function(BenchmarkId::from_parameter(turns), |b| {
        b.iter(|| run(&runtime, &tool, &responses));
    });
    group.finish();

    let tools: Vec<Arc<dyn ToolDefinition>> = (0..10)
        .map(|n| {
            Arc::new(FnTool::new(
                format!("tool_{n}"),
                "A tool.",
                json!({"type": "object"}),
                |_, _| async { Ok::<_, ToolError>(ToolResult::text("ok")) },
            )) as Arc<dyn ToolDefinition>
        })
        .collect();
    let definition = Agent::builder()
        .model(FauxModel::new())
        .tools(tools)
        .build_definition()
        .expect("the definition builds");
    c.bench_function("agent_loop/conversation/start", |b| {
        b.iter(|| black_box(definition.conversation()));
    });
}

criterion_group!(benches, agent_loop);
criterion_main!(benches);
